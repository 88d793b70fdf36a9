"""Join look-ups narrowed by the predicates (docs/matching.md, "Indexed joins").

A join step binds a new variable to its candidate events in a time range per row (the window
and the SEQ order: positions [low, high) of its candidates, which are in time order). A join
predicate that bounds one attribute of the new variable by the variables already bound —
`a.x < b.x`, `a.x == b.x`, `0 < b.x - a.x < 3`, `abs(a.x - b.x) < d` — gives each row a value
range as well. `SlicedIndex` answers both ranges at once: the candidates cut into consecutive
slices of time, each sorted by the attribute, so a row's time range is whole slices (two
`searchsorted` each on the value range) plus two partial slices at its ends (tested event by
event). The rows a step builds are then the narrowed candidates, not the window's cross product
filtered afterwards; the predicates are still evaluated on them (the look-up may keep more,
never fewer: bounds moved across `+`/`-` are widened by the rounding they can carry), so the
matches are exactly those of the unnarrowed join, in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from cepplan.engine_adapter.runtime.pieces import row_batches
from cepplan.engine_adapter.runtime.table import expand

# a look-up is narrowed when its rows' time ranges hold this many candidates on average (fewer:
# the cross product is as cheap as the index), and kept narrowed when the value ranges keep at
# most MAX_SHARE of them (more: the narrowed rows cost more to gather than to filter)
MIN_RANGE = 64
MAX_SHARE = 0.25
# slices of about sqrt(range / 2) candidates balance the slices a range spans against the
# candidates at its two partial ends; within these bounds
MIN_SLICE, MAX_SLICE = 4, 1024
# a bound moved across + or - is widened by this share of its terms' size: the rounding of a
# sum of doubles is far below it, so the look-up keeps every candidate the predicate keeps
ROUNDING = 1e-9


def slice_size(mean_range: float) -> int:
    """Candidates per slice for time ranges of `mean_range` candidates on average."""
    size = 2 ** round(math.log2(max(1.0, math.sqrt(mean_range / 2))))
    return int(min(MAX_SLICE, max(MIN_SLICE, size)))


class SlicedIndex:
    """A variable's candidate values (in time order) cut into slices of `size` consecutive
    candidates, each slice sorted by value; NaN is never found (a comparison with NaN is
    false)."""

    def __init__(self, values: np.ndarray, size: int):
        self.size = size
        self.length = len(values)
        finite = ~np.isnan(values)
        self.distinct = np.unique(values[finite])
        self.ranks = np.searchsorted(self.distinct, values)
        self.ranks[~finite] = len(self.distinct)
        self.stride = len(self.distinct) + 1
        keys = np.arange(len(values)) // size * self.stride + self.ranks
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]

    def rank_ranges(self, lower: np.ndarray, upper: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the ranks [first, stop) of the distinct values in [lower, upper]."""
        return (np.searchsorted(self.distinct, lower, "left"),
                np.searchsorted(self.distinct, upper, "right"))

    def work(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Per row, the entries a look-up reads: its whole slices and its two partial ends."""
        first, stop, _, _ = self._parts(low, high)
        return (stop - first) + 2 * self.size

    def counts(self, low: np.ndarray, high: np.ndarray, rank_low: np.ndarray,
               rank_high: np.ndarray) -> np.ndarray:
        """Per row, how many candidates in [low, high) have a value rank in its range."""
        whole, ends = self._found(low, high, rank_low, rank_high)
        rows, begin, end = whole
        counts = np.bincount(rows, weights=end - begin, minlength=len(low)).astype(np.int64)
        return counts + np.bincount(ends[0], minlength=len(low))

    def pairs(self, low: np.ndarray, high: np.ndarray, rank_low: np.ndarray,
              rank_high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, candidate position) of every candidate found, by row then position: the
        order the unnarrowed range expansion gives them."""
        (rows, begin, end), (end_rows, end_positions) = self._found(low, high, rank_low,
                                                                    rank_high)
        which, at = expand(begin, end)
        rows = np.concatenate([rows[which], end_rows])
        positions = np.concatenate([self.order[at], end_positions])
        order = np.argsort(rows * self.length + positions)
        return rows[order], positions[order]

    def _parts(self, low: np.ndarray, high: np.ndarray):
        """Per row, its whole slices [first, stop) and its partial ends [low, left_end) and
        [right_start, high) (the whole range when it spans no whole slice)."""
        high = np.maximum(high, low)
        first = -(-low // self.size)
        stop = high // self.size
        spans = stop > first
        stop = np.where(spans, stop, first)
        left_end = np.where(spans, first * self.size, high)
        right_start = np.where(spans, stop * self.size, high)
        return first, stop, left_end, right_start

    def _found(self, low, high, rank_low, rank_high):
        """The whole slices' hits as (row, begin, end) into `order`, and the partial ends'
        hits as (row, position)."""
        high = np.maximum(high, low)
        first, stop, left_end, right_start = self._parts(low, high)
        rows, slices = expand(first, stop)
        base = slices * self.stride
        begin = np.searchsorted(self.keys, base + rank_low[rows], "left")
        end = np.searchsorted(self.keys, base + np.maximum(rank_high, rank_low)[rows], "left")
        starts = np.stack([low, right_start], axis=1).ravel()
        ends = np.stack([left_end, high], axis=1).ravel()
        end_rows, positions = expand(starts, ends)
        end_rows //= 2
        ranks = self.ranks[positions]
        hit = (ranks >= rank_low[end_rows]) & (ranks < rank_high[end_rows])
        return (rows, begin, end), (end_rows[hit], positions[hit])


def narrowed_pieces(index: SlicedIndex, low: np.ndarray, high: np.ndarray,
                    rank_low: np.ndarray, rank_high: np.ndarray, counts: np.ndarray,
                    budget: int) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """The narrowed look-up in pieces of at most `budget` found rows (one row over it: in
    parts of its own): (the rows' slice, row within the piece, candidate position)."""
    for rows in row_batches(counts, budget):
        which, positions = index.pairs(low[rows], high[rows], rank_low[rows], rank_high[rows])
        if len(which) <= budget:
            yield rows, which, positions
            continue
        for begin in range(0, len(which), budget):
            yield rows, which[begin:begin + budget], positions[begin:begin + budget]
