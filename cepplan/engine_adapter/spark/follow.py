"""`cepplan run PLAN --follow SOURCE --engine spark -o DIR`: the Structured Streaming job
generated and submitted; its checkpoint directory (given, or a scratch one) checked to belong
to this plan, source and output; the first SIGINT / SIGTERM ends the stream as `_END` does
(the job processes what arrived, matches it to the end and exits), a second one stops it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cepplan.engine_adapter.local.follow import (
    check_streamable,
    progress_text,
    stop_on_signal,
)
from cepplan.engine_adapter.spark.generate import generate
from cepplan.engine_adapter.spark.stream_job import (
    END_FOLDER,
    check_source,
    claim_checkpoint,
    write_end_marker,
)
from cepplan.engine_adapter.spark.stream_replan import StreamReplanner
from cepplan.engine_adapter.spark.submit import JobFailed, submit_stream
from cepplan.errors import InputError
from cepplan.interrupt import scratch_directory
from cepplan.sources.time_text import time_writer


def follow_on_spark(loaded, chosen, data: dict[str, Any], plan_file: str, follow: str,
                    out: Path, checkpoint: Path | None, *, trigger: float, master: str,
                    quiet: bool, verbose: bool,
                    adaptive: dict[str, Any] | None = None,
                    warn: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the stream of the job `data` (of `chosen` on `loaded`) on Spark until it ends
    (`adaptive`: job.json's section for checking its statistics as it goes; each drift it
    reports re-planned, a better plan switched to: `stream_replan.py`); returns
    metrics.json's figures (`out` holds the sink: `output=matches/`,
    `output=late-events/`, ... and `metrics.json`)."""
    check_streamable(data, plan_file)
    if follow == "-":
        raise InputError.single("--follow", "", "Spark follows a directory or "
                                "tcp://HOST:PORT, not standard input")
    check_source(data, follow)
    with scratch_directory() as scratch:
        place = checkpoint or scratch / "checkpoint"
        # its job.json, as the job reads it, is what is claimed
        job = generate(loaded, chosen, scratch / "job", plan_kind=data["plan"]["kind"],
                       streaming=True, adaptive=adaptive)
        written = json.loads((job / "job.json").read_text())
        claim_checkpoint(place, written, follow, out)
        ends = place / END_FOLDER
        ends.mkdir(parents=True, exist_ok=True)
        replanner = StreamReplanner(loaded, chosen, written, place, out, warn) \
            if adaptive is not None else None
        meter = _Progress(data) if not quiet and sys.stderr.isatty() else None
        watchers = [w for w in (replanner, meter) if w is not None]
        try:
            with stop_on_signal(lambda: write_end_marker(ends, stop=True)):
                submit_stream(job, follow, out, place, trigger=trigger, master=master,
                              quiet=quiet, verbose=verbose,
                              on_progress=(lambda figures: [w(figures) for w in watchers])
                              if watchers else None)
        except JobFailed:
            _drop_empty_sink(out)
            raise
        finally:
            if meter is not None and meter.shown:
                sys.stderr.write("\n")
        metrics = json.loads((out / "metrics.json").read_text())
        if replanner is not None:
            replanner.finish(metrics["stream"])
    return metrics


class _Progress:
    """The Spark stream's progress line on a terminal, rewritten per micro-batch, as the
    in-process stream's (`progress_text`), the watermark in the input's time."""

    def __init__(self, data: dict[str, Any]):
        source = data["reader"]["source"]
        self.time_text = time_writer(source.get("time_format"), data["reader"]["time_unit"])
        self.shown = False
        self.switch = ""  # the last plan switch's words

    def __call__(self, figures: dict[str, Any]) -> None:
        mark = figures["watermark"]
        if "switch" in figures:
            switch = figures["switch"]
            gain = f" ({switch['modelled_gain']:.2f}x)" if "modelled_gain" in switch else ""
            self.switch = f"  plan switched at batch {switch['micro_batch']}{gain}"
        sys.stderr.write("\r" + progress_text(
            figures["rate"], "-" if mark is None else self.time_text(mark), figures["matches"],
            figures["late_events"], figures["state_rows"],
            None if figures["latency"] is None else tuple(figures["latency"])) +
            f"{self.switch}\x1b[K")
        sys.stderr.flush()
        self.shown = True


def _drop_empty_sink(out: Path) -> None:
    """After a job that failed before its sink committed anything (a socket that refused
    the connection): `out` left empty, as it was, not holding the sink's empty log."""
    log = out / "_spark_metadata"
    if log.is_dir() and not any(log.iterdir()) and [p.name for p in out.iterdir()] == [log.name]:
        log.rmdir()
