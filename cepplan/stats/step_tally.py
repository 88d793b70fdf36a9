"""Events per (type, time step), summed batch by batch into compact NumPy arrays: the
in-process engine's per-step table, whose size is that of the table (distinct pairs, 8 bytes
each while steps and counts fit 32 bits), never that of the input.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import numpy as np

MIN_MERGE = 1 << 16  # out-of-order pairs are merged once they outnumber the others
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


class _TypeSteps:
    """One type's distinct steps and counts: runs in step order, each after the one before
    (time-ordered input only ever appends), and runs that are not, merged with the others
    whenever they outnumber them (each pair merged O(log n) times)."""

    def __init__(self) -> None:
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []
        self._held = 0
        self._unordered: list[tuple[np.ndarray, np.ndarray]] = []
        self._waiting = 0

    def add(self, steps: np.ndarray, counts: np.ndarray) -> None:
        if not self._unordered and self.runs and steps[0] == self.runs[-1][0][-1]:
            self._add_to_last(int(counts[0]))  # a step across two batches
            steps, counts = steps[1:], counts[1:]
            if not len(steps):
                return
        if not self._unordered and (not self.runs or steps[0] > self.runs[-1][0][-1]):
            self.runs.append((steps, counts))
            self._held += len(steps)
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

    def merge(self) -> None:
        if not self._unordered:
            return
        parts = [*self.runs, *self._unordered]
        steps = np.concatenate([s for s, _ in parts])
        counts = np.concatenate([c for _, c in parts])
        _, steps, counts = summed_pairs(np.zeros(len(steps), dtype=np.int8), steps, counts)
        self.runs = [(narrow(steps), narrow(counts))]
        self._held, self._unordered, self._waiting = len(steps), [], 0

    def __len__(self) -> int:
        self.merge()
        return self._held


class StepTally:
    """Events per (type, step) over batches; `names` are the types in order of appearance."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._types: list[_TypeSteps] = []

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

    def step_type(self) -> np.dtype:
        """The integer type holding every step counted (int32 when they fit)."""
        return np.result_type(np.int32, *(s.dtype for t in self._types for s, _ in t.runs))

    def count_type(self) -> np.dtype:
        """The integer type holding every count."""
        return np.result_type(np.int32, *(c.dtype for t in self._types for _, c in t.runs))

    def size(self, code: int) -> int:
        """Distinct steps of the type `names[code]`."""
        return len(self._types[code])

    def drain(self, code: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The type's steps and counts in step order, run by run, each forgotten once handed
        on (so copying them out never holds them twice)."""
        typed = self._types[code]
        typed.merge()
        runs, typed.runs = typed.runs[::-1], []
        while runs:
            yield runs.pop()

    def _code(self, name: str) -> int:
        if name not in self._index:
            self._index[name] = len(self.names)
            self.names.append(name)
            self._types.append(_TypeSteps())
        return self._index[name]
