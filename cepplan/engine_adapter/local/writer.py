"""The run's output directory: matches as part files and metrics.json, written into a hidden
staging directory beside `--out` and renamed over it only when everything succeeded
(`cepplan.interrupt.staged_directory`, which also clears what killed runs left behind).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cepplan.engine_adapter.runtime.records import lines_data
from cepplan.fileio import write_bytes_atomic
from cepplan.interrupt import staged_directory

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
            self._text = open(matches / "part-00000.jsonl", "wb")  # noqa: SIM115

    def write(self, pattern: str, lines: str | pa.ChunkedArray, count: int) -> None:
        """Append `count` matches given as JSON lines (`PartitionOutput.matches`: one string,
        or Arrow strings of one line each, written from their buffer without a copy)."""
        if not count:
            return
        if self._text is not None:
            for data in [lines.encode()] if isinstance(lines, str) else lines_data(lines):
                self._text.write(data)
        else:
            texts = (pa.array(lines.split("\n")[:-1], pa.string()) if isinstance(lines, str)
                     else pc.utf8_rtrim(lines, characters="\n").cast(pa.string()))
            table = pa.table({"pattern": pa.array([pattern] * count, pa.string()),
                              "match": texts}, schema=PARQUET_SCHEMA)
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
            self._parquet = None


@contextmanager
def staged_output(out: Path, output_format: str) -> Iterator[tuple[MatchWriter, Any]]:
    """(match writer, finish(metrics)) over a fresh staging directory, renamed over `out`
    when the block ends normally; on any exception (Ctrl-C and SIGTERM included) it is removed
    and `out` left as it was."""
    with staged_directory(out) as staging:
        staging.mkdir()
        writer = MatchWriter(staging, output_format)

        def finish(metrics: dict[str, Any]) -> None:
            writer.close()
            write_bytes_atomic(staging / "metrics.json", json.dumps(metrics, indent=2).encode())

        try:
            yield writer, finish
        finally:
            writer.close()
