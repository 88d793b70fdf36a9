"""A live stream's matches as Parquet (`--follow --format parquet`): per micro-batch, each
pattern's matches as a new part `OUT/matches/pattern=NAME/part-NNNNN.parquet` in the batch
engine's typed columns, written under a hidden name and renamed once whole, so that a reader
never sees half a file. Part numbers count up over the stream; a checkpoint records how many
were used, and a restart removes the parts numbered after it (docs/engine.md, "Live streams")."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from cepplan.engine_adapter.runtime.job import PartitionOutput
from cepplan.engine_adapter.runtime.match_rows import PatternColumns
from cepplan.engine_adapter.runtime.parquet_parts import ParquetParts
from cepplan.errors import InputError

_PART = re.compile(r"part-(\d+)\.parquet")


class StreamParts:
    """The Parquet parts under `matches` (a directory per pattern of `layouts`): `write`
    during a micro-batch, `flush` at its end makes its parts visible, `sync` puts them on disk
    and says how many part numbers were used. With `resume` (that number, from a checkpoint)
    the parts numbered from it on, and any hidden leftover, are removed first. Every pattern
    gets an empty part of its columns at the start, so that each reads as a table at once."""

    def __init__(self, matches: Path, layouts: Mapping[str, PatternColumns],
                 resume: int | None = None):
        self.matches = matches
        self.layouts = layouts
        self.used = 0 if resume is None else _cut_parts(matches, resume)
        self._batch: ParquetParts | None = None
        self._unsynced: list[Path] = []
        empty = [n for n in layouts if not any(self._folder(n).glob("part-*.parquet"))]
        if empty:
            import pyarrow.parquet as pq

            self._start_batch()
            for name in empty:
                self._folder(name).mkdir(exist_ok=True)
                pq.write_table(layouts[name].schema.empty_table(),
                               self._folder(name) / f".{self._name()}")
            self.flush()

    def write(self, pattern: str, out: PartitionOutput) -> None:
        """Add one range's matches to the micro-batch's part of `pattern`."""
        self._start_batch()
        self._batch.write(pattern, out)

    def flush(self) -> None:
        """The micro-batch's parts written whole and renamed to their visible names."""
        if self._batch is None:
            return
        self._batch.close()
        self._batch = None
        name = self._name()
        renamed = [folder / name for folder in self.matches.glob("pattern=*")
                   if (folder / f".{name}").exists()]
        for path in renamed:
            os.replace(path.with_name(f".{name}"), path)
        self._unsynced += renamed
        self.used += bool(renamed)  # numbers without gaps: a restart checks they are all there

    def sync(self) -> int:
        """The parts made visible since the last call put on disk, with their directories;
        the part numbers used so far (what a checkpoint records)."""
        for path in [*self._unsynced, *{p.parent for p in self._unsynced}]:
            handle = os.open(path, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
        self._unsynced.clear()
        return self.used

    def close(self) -> None:
        self.flush()

    def _start_batch(self) -> None:
        if self._batch is None:
            self._batch = ParquetParts(self.matches, f".part-{self.used:05d}", self.layouts)

    def _name(self) -> str:
        return f"part-{self.used:05d}.parquet"

    def _folder(self, pattern: str) -> Path:
        return self.matches / f"pattern={pattern}"


def _cut_parts(matches: Path, used: int) -> int:
    """Remove the parts numbered `used` or more (written after the checkpoint) and hidden
    leftovers of a killed write; `used` again, or an `InputError` when a part numbered below
    it is missing from every pattern (the output was changed since)."""
    kept: set[int] = set()
    for path in matches.glob("pattern=*/*.parquet"):
        found = _PART.fullmatch(path.name)
        if path.name.startswith(".") or (found and int(found[1]) >= used):
            path.unlink()
        elif found:
            kept.add(int(found[1]))
    if len(kept) < used:
        raise InputError.single(str(matches), "", f"holds {len(kept)} of the {used} Parquet "
                                "parts the checkpoint records: the output was changed since; "
                                "start again with a new output and --checkpoint")
    return used
