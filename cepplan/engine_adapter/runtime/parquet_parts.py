"""Typed match rows as Parquet part files, `DIR/pattern=NAME/<part>.parquet` (docs/engine.md,
"Matches as Parquet"): the in-process engine's writer, the Spark job's range-local tasks and
match groups write them. Imports only pyarrow and the runtime (shipped in the Spark job's zip).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from cepplan.engine_adapter.runtime.match_rows import PatternColumns

if TYPE_CHECKING:
    from cepplan.engine_adapter.runtime.job import PartitionOutput


class ParquetParts:
    """Typed match rows (`PartitionOutput.rows`) into `DIR/pattern=NAME/<part>.parquet`, a
    file per pattern with matches, opened at its first rows. Rows are buffered per pattern
    into row groups of up to `GROUP_ROWS` (a row group per rendered chunk would make
    small ones); all buffers are written out once they hold `BUFFERED_BYTES` together, so
    memory stays bounded however many patterns there are."""

    GROUP_ROWS = 1 << 17
    BUFFERED_BYTES = 64 << 20

    def __init__(self, directory: Path, part: str, layouts: Mapping[str, PatternColumns]):
        self.directory = directory
        self.part = part
        self.layouts = layouts
        self._files: dict[str, Any] = {}
        self._pending: dict[str, list[pa.RecordBatch]] = {}
        self._rows: dict[str, int] = {}
        self._bytes = 0

    def write(self, pattern: str, out: PartitionOutput) -> None:
        for batch in out.rows(self.layouts[pattern]):
            self._pending.setdefault(pattern, []).append(batch)
            self._rows[pattern] = self._rows.get(pattern, 0) + batch.num_rows
            self._bytes += batch.nbytes
            if self._rows[pattern] >= self.GROUP_ROWS:
                self._flush(pattern)
            if self._bytes >= self.BUFFERED_BYTES:
                for name in list(self._pending):
                    self._flush(name)

    def close(self, *, complete: bool = True) -> None:
        """Write what is buffered (`complete`) and close the files."""
        if complete:
            for name in list(self._pending):
                self._flush(name)
        self._pending.clear()
        for handle in self._files.values():
            handle.close()
        self._files.clear()

    def _flush(self, pattern: str) -> None:
        batches = self._pending.pop(pattern, [])
        self._rows.pop(pattern, None)
        self._bytes -= sum(b.nbytes for b in batches)
        if not batches:
            return
        if pattern not in self._files:
            import pyarrow.parquet as pq

            folder = self.directory / f"pattern={pattern}"
            folder.mkdir(exist_ok=True)
            self._files[pattern] = pq.ParquetWriter(folder / f"{self.part}.parquet",
                                                    self.layouts[pattern].schema)
        self._files[pattern].write_table(pa.Table.from_batches(batches),
                                         row_group_size=self.GROUP_ROWS)


def complete_parts(directory: Path, layouts: Mapping[str, PatternColumns]) -> None:
    """An empty `part-00000.parquet` (the pattern's schema, no rows) in the directory of each
    pattern that has no part, so that every pattern reads as a table of its columns."""
    import pyarrow.parquet as pq

    for name, layout in layouts.items():
        folder = directory / f"pattern={name}"
        if not folder.is_dir() or not any(folder.glob("*.parquet")):
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(layout.schema.empty_table(), folder / "part-00000.parquet")
