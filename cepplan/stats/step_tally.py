"""Events per (type, time step), summed batch by batch into compact NumPy arrays: the
in-process engine's per-step table (distinct pairs, 8 bytes each while steps and counts fit
32 bits), never the input; on time-ordered input at most `SPILL_PAIRS` pairs of a type are
held in memory, the older ones in a temporary file, read back in order by the summaries.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from itertools import pairwise

import numpy as np

MIN_MERGE = 1 << 16  # out-of-order pairs are merged once they outnumber the others
SPILL_PAIRS = 1 << 17  # a type's pairs held in memory (1 MB) before the oldest are spilled
_INT32 = np.iinfo(np.int32)


def narrow(values: np.ndarray) -> np.ndarray:
    """Whole numbers as int32 when they all fit (half the memory), else as int64."""
    if len(values) and (values.min() < _INT32.min or values.max() > _INT32.max):
        return values.astype(np.int64, copy=False)
    return values.astype(np.int32)


def summed_pairs(codes: np.ndarray, steps: np.ndarray, counts: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (code, step) pairs in (code, step) order, with their summed `counts`
    (1 per row without counts): codes, steps, int64 sums."""
    if not len(steps):
        return codes[:0], steps[:0], np.zeros(0, dtype=np.int64)
    low = int(steps.min())
    width = int(steps.max()) - low + 1
    types = int(codes.max()) + 1
    if types * width <= 4 * len(steps) + MIN_MERGE:  # dense: each pair counted in its slot
        slots = codes.astype(np.int64) * width + (steps - low)
        totals = np.bincount(slots, weights=counts, minlength=types * width)
        occupied = np.flatnonzero(totals)
        return ((occupied // width).astype(codes.dtype), occupied % width + low,
                totals[occupied].astype(np.int64))
    order = np.lexsort((steps, codes))
    codes, steps = codes[order], steps[order]
    starts = np.flatnonzero(np.concatenate(
        [[True], (codes[1:] != codes[:-1]) | (steps[1:] != steps[:-1])]))
    weights = np.ones(len(steps), dtype=np.int64) if counts is None else counts[order]
    return codes[starts], steps[starts], np.add.reduceat(weights, starts)


class _SpillFile:
    """An unnamed temporary file the older steps of every type are appended to, read back
    chunk by chunk (never mapped: mapped pages would count as the process's memory)."""

    def __init__(self) -> None:
        # open while a type's steps are read (closed, and gone, with the last of them)
        self._file = tempfile.TemporaryFile(prefix="cepplan-steps-")  # noqa: SIM115
        self._end = 0

    def write(self, steps: np.ndarray, counts: np.ndarray) -> tuple[int, int, str, str]:
        """Append a run; its place (offset, pairs, step type, count type)."""
        place = (self._end, len(steps), steps.dtype.str, counts.dtype.str)
        for values in (steps, counts):
            self._file.write(values.tobytes())
            self._end += values.nbytes
        self._file.flush()
        return place

    def read(self, place: tuple[int, int, str, str]) -> tuple[np.ndarray, np.ndarray]:
        offset, pairs, step_type, count_type = place
        size = pairs * np.dtype(step_type).itemsize
        data = os.pread(self._file.fileno(), size + pairs * np.dtype(count_type).itemsize,
                        offset)
        return (np.frombuffer(data, step_type, pairs),
                np.frombuffer(data, count_type, pairs, offset=size))


class _TypeSteps:
    """One type's distinct steps and counts: runs in step order, each after the one before
    (time-ordered input only ever appends), and runs that are not, merged with the others
    whenever they outnumber them (each pair merged O(log n) times). Beyond `SPILL_PAIRS`
    pairs in memory the oldest go to the spill file, `SPILL_PAIRS / 2` newest kept, so
    time-ordered input (or input out of order by less than those steps) holds a bounded
    number; a run reaching back before the spilled steps brings them back (and keeps them),
    as input far out of time order needs them all to merge."""

    def __init__(self, spill: _SpillFile) -> None:
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []
        self._held = 0
        self._unordered: list[tuple[np.ndarray, np.ndarray]] = []
        self._waiting = 0
        self._spill = spill
        self.spilled: list[tuple[int, int, str, str]] = []  # places in the spill file
        self.spilled_pairs = 0
        self.spilled_events = 0
        self._spilled_last = 0  # the last step spilled
        self._may_spill = True

    def add(self, steps: np.ndarray, counts: np.ndarray) -> None:
        if not self._unordered and self.runs and steps[0] == self.runs[-1][0][-1]:
            self._add_to_last(int(counts[0]))  # a step across two batches
            steps, counts = steps[1:], counts[1:]
            if not len(steps):
                return
        if not self._unordered and (not self.runs or steps[0] > self.runs[-1][0][-1]):
            self.runs.append((steps, counts))
            self._held += len(steps)
            self._spill_older()
            return
        self._unordered.append((steps, counts))
        self._waiting += len(steps)
        if self._waiting > max(self._held, MIN_MERGE):
            self.merge()

    def _add_to_last(self, count: int) -> None:
        """Add `count` events to the last step of the last run (the runs are our own)."""
        steps, counts = self.runs[-1]
        total = int(counts[-1]) + count
        if total > np.iinfo(counts.dtype).max:
            counts = counts.astype(np.int64)
            self.runs[-1] = (steps, counts)
        counts[-1] = total

    def _spill_older(self) -> None:
        """Past `SPILL_PAIRS` pairs in memory, the oldest to the spill file, the newest
        `SPILL_PAIRS / 2` kept."""
        if not self._may_spill or self._unordered or self._held <= SPILL_PAIRS:
            return
        excess = self._held - SPILL_PAIRS // 2
        while excess > 0:
            steps, counts = self.runs[0]
            take = min(excess, len(steps))
            self.spilled.append(self._spill.write(steps[:take], counts[:take]))
            self.spilled_pairs += take
            self.spilled_events += int(counts[:take].sum(dtype=np.int64))
            self._spilled_last = int(steps[take - 1])
            if take == len(steps):
                self.runs.pop(0)
            else:
                self.runs[0] = (steps[take:].copy(), counts[take:].copy())
            self._held -= take
            excess -= take

    def merge(self) -> None:
        if not self._unordered:
            return
        parts = [*self.runs, *self._unordered]
        if self.spilled and min(int(s[0]) for s, _ in self._unordered) <= self._spilled_last:
            parts = [*map(self._spill.read, self.spilled), *parts]
            self.spilled, self.spilled_pairs, self.spilled_events = [], 0, 0
            self._may_spill = False
        steps = np.concatenate([s for s, _ in parts])
        counts = np.concatenate([c for _, c in parts])
        _, steps, counts = summed_pairs(np.zeros(len(steps), dtype=np.int8), steps, counts)
        self.runs = [(narrow(steps), narrow(counts))]
        self._held, self._unordered, self._waiting = len(steps), [], 0
        self._spill_older()


class SpilledSteps:
    """A type's `OrderedSteps` (`step_counts`): its spilled runs read back one at a time,
    then those in memory."""

    def __init__(self, typed: _TypeSteps, spill: _SpillFile):
        typed.merge()
        self._spill, self._places, self._runs = spill, typed.spilled, typed.runs
        self.size = typed.spilled_pairs + sum(len(s) for s, _ in self._runs)
        self.events = typed.spilled_events + sum(int(c.sum(dtype=np.int64))
                                                 for _, c in self._runs)
        first = next(self.chunks(), None)
        self.first = int(first[0][0]) if first is not None else 0
        self.last = int(self._runs[-1][0][-1]) if self._runs else -1

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for place in self._places:
            yield self._spill.read(place)
        yield from self._runs


class StepTally:
    """Events per (type, step) over batches; `names` are the types in order of appearance."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._types: list[_TypeSteps] = []
        self._spill = _SpillFile()

    def add(self, type_codes: np.ndarray, type_names: list[str], steps: np.ndarray) -> None:
        """Count rows of types `type_names[type_codes]` at `steps`."""
        if not len(steps):
            return
        known = np.full(len(type_names), -1, dtype=np.int32)
        for code in np.flatnonzero(np.bincount(type_codes, minlength=len(type_names))):
            known[code] = self._code(type_names[code])  # only the types these rows are of
        codes, steps, counts = summed_pairs(known[type_codes], steps)
        starts = np.flatnonzero(np.concatenate([[True], codes[1:] != codes[:-1]]))
        for low, high in pairwise([*starts, len(codes)]):  # copies: the batch's are not held
            self._types[codes[low]].add(narrow(steps[low:high]), narrow(counts[low:high]))

    def ordered(self) -> dict[str, SpilledSteps]:
        """Per type name, in name order, its steps and counts in step order."""
        return {name: SpilledSteps(self._types[self._index[name]], self._spill)
                for name in sorted(self.names)}

    def _code(self, name: str) -> int:
        if name not in self._index:
            self._index[name] = len(self.names)
            self.names.append(name)
            self._types.append(_TypeSteps(self._spill))
        return self._index[name]
