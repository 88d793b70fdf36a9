"""`cepplan run PLAN --follow SOURCE --engine spark -o DIR`: the Structured Streaming job
generated and submitted; its checkpoint directory (given, or a scratch one) checked to belong
to this plan, source and output; the first SIGINT / SIGTERM ends the stream as `_END` does
(the job processes what arrived, matches it to the end and exits), a second one stops it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cepplan.engine_adapter.local.checkpoint import job_digest
from cepplan.engine_adapter.local.follow import check_streamable, stop_on_signal
from cepplan.engine_adapter.spark.generate import generate
from cepplan.engine_adapter.spark.stream_job import END_FOLDER, check_source, write_end_marker
from cepplan.engine_adapter.spark.submit import JobFailed, submit_stream
from cepplan.errors import InputError
from cepplan.fileio import write_bytes_atomic
from cepplan.interrupt import scratch_directory

IDENTITY = "cepplan-stream.json"  # in the checkpoint: the job, source and output it is for


def follow_on_spark(loaded, chosen, data: dict[str, Any], plan_file: str, follow: str,
                    out: Path, checkpoint: Path | None, *, trigger: float, master: str,
                    quiet: bool, verbose: bool) -> dict[str, Any]:
    """Run the stream of the job `data` (of `chosen` on `loaded`) on Spark until it ends;
    returns metrics.json's figures (`out` holds the sink: `output=matches/`,
    `output=late-events/`, ... and `metrics.json`)."""
    check_streamable(data, plan_file)
    if follow == "-":
        raise InputError.single("--follow", "", "Spark follows a directory or "
                                "tcp://HOST:PORT, not standard input")
    check_source(data, follow)
    with scratch_directory() as scratch:
        place = checkpoint or scratch / "checkpoint"
        _claim(place, {"job": job_digest(data), "source": _real(follow),
                       "output": _real(str(out))})
        job = generate(loaded, chosen, scratch / "job", plan_kind=data["plan"]["kind"],
                       streaming=True)
        ends = place / END_FOLDER
        ends.mkdir(parents=True, exist_ok=True)
        try:
            with stop_on_signal(lambda: write_end_marker(ends, stop=True)):
                submit_stream(job, follow, out, place, trigger=trigger, master=master,
                              quiet=quiet, verbose=verbose)
        except JobFailed:
            _drop_empty_sink(out)
            raise
    return json.loads((out / "metrics.json").read_text())


def _claim(place: Path, identity: dict[str, str]) -> None:
    """`place` holds the checkpoint of this stream (a restart) or is new or empty (then it
    is claimed for it); an `InputError` for anything else."""
    if place.exists() and not place.is_dir():
        raise InputError.single(str(place), "", "is a file; --checkpoint needs a directory")
    marker = place / IDENTITY
    if marker.exists():
        recorded = json.loads(marker.read_text())
        for key, what in (("job", "plan or workload"), ("source", "followed source"),
                          ("output", "output directory")):
            if recorded.get(key) != identity[key]:
                raise InputError.single(str(place), "", f"was written for another {what}; "
                                        "give the same arguments as the run it continues, "
                                        "or a new --checkpoint")
        return
    if place.is_dir() and any(place.iterdir()):
        raise InputError.single(str(place), "", "is not empty and holds no checkpoint of a "
                                "stream on Spark: give a new or empty directory, or the one "
                                "of the run to continue")
    place.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(marker, json.dumps(identity).encode())


def _drop_empty_sink(out: Path) -> None:
    """After a job that failed before its sink committed anything (a socket that refused
    the connection): `out` left empty, as it was, not holding the sink's empty log."""
    log = out / "_spark_metadata"
    if log.is_dir() and not any(log.iterdir()) and [p.name for p in out.iterdir()] == [log.name]:
        log.rmdir()


def _real(path: str) -> str:
    return path if "://" in path else os.path.realpath(path)
