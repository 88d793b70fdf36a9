"""The run's output directory: matches as part files and metrics.json, written into a hidden
staging directory beside `--out` and renamed over it only when everything succeeded.

A staging directory carries the writing process's id, so the next run removes those whose
process is gone (a run killed with SIGKILL cannot clean up after itself).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cepplan.fileio import write_bytes_atomic

STAGING_PREFIX = ".cepplan-local-"
PARQUET_SCHEMA = pa.schema([("pattern", pa.string()), ("match", pa.string())])


class MatchWriter:
    """Streams matches (JSON texts) into `OUT/matches/part-00000.<jsonl|parquet>`; writes
    the consumer queries' results, if any, under `OUT/results/`."""

    def __init__(self, staging: Path, output_format: str):
        self._staging = staging
        matches = staging / "matches"
        matches.mkdir()
        self._parquet = None
        self._text = None
        if output_format == "parquet":
            self._parquet = pq.ParquetWriter(matches / "part-00000.parquet", PARQUET_SCHEMA)
        else:
            # closed by close(), which every path through staged_output calls
            self._text = open(matches / "part-00000.jsonl", "w", encoding="utf-8")  # noqa: SIM115

    def write(self, pattern: str, lines: str, count: int) -> None:
        """Append `count` matches given as JSON lines (`PartitionOutput.matches`)."""
        if not count:
            return
        if self._text is not None:
            self._text.write(lines)
        else:
            texts = lines.split("\n")[:-1]
            table = pa.table({"pattern": pa.array([pattern] * count, pa.string()),
                              "match": pa.array(texts, pa.string())}, schema=PARQUET_SCHEMA)
            self._parquet.write_table(table)

    def write_results(self, lines: bytes) -> None:
        """The consumer queries' results (JSON lines) as `OUT/results/part-00000.jsonl`."""
        (self._staging / "results").mkdir()
        (self._staging / "results" / "part-00000.jsonl").write_bytes(lines)

    def close(self) -> None:
        if self._text is not None:
            self._text.close()
        if self._parquet is not None:
            self._parquet.close()


@contextmanager
def staged_output(out: Path, output_format: str) -> Iterator[tuple[MatchWriter, Any]]:
    """(match writer, finish(metrics)) over a fresh staging directory; `finish` writes
    metrics.json and swaps the directory over `out`. On any exception (Ctrl-C and SIGTERM
    included) the staging directory is removed and `out` left as it was."""
    out = Path(out).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out.parent)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # an ordinary directory once renamed, not mkdtemp's 0700
    writer = None
    try:
        writer = MatchWriter(staging, output_format)

        def finish(metrics: dict[str, Any]) -> None:
            writer.close()
            write_bytes_atomic(staging / "metrics.json",
                               json.dumps(metrics, indent=2).encode())
            if out.exists():
                old = staging.with_name(staging.name + ".old")
                out.replace(old)
                staging.replace(out)
                shutil.rmtree(old, ignore_errors=True)
            else:
                staging.replace(out)

        yield writer, finish
    except BaseException:
        if writer is not None:
            writer.close()
        shutil.rmtree(staging, ignore_errors=True)
        raise


def remove_stale_staging(parent: Path) -> None:
    """Remove staging directories left by local runs whose process no longer exists."""
    for entry in parent.glob(f"{STAGING_PREFIX}*"):
        pid = entry.name[len(STAGING_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
