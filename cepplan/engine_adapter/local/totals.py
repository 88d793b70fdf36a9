"""One pattern's counts over the time ranges it is matched in, added range by range (by the
in-process engine, its workers and the Spark job's range-local tasks) and read into
metrics.json: a named record, not a list of counts by position."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass
class PatternTotals:
    """Rows sent to the pattern's matchers, matches written, Kleene bindings cut by the cap,
    matches held back at the input's end, and join pieces split off beyond the first."""

    sent: int = 0
    matches: int = 0
    cap_hits: int = 0
    held_back: int = 0
    splits: int = 0

    def add(self, other: PatternTotals) -> None:
        """Another range's counts added to these."""
        for name in (f.name for f in fields(self)):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def add_output(self, out: Any) -> None:
        """A partition's output (`PartitionOutput`): its matches, cap hits, matches held back
        and splits."""
        self.matches += out.count
        self.cap_hits += out.cap_hits
        self.held_back += out.held_back
        self.splits += out.splits
