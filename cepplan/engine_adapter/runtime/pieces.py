"""Bounded pieces of the matcher's work (docs/engine.md, "Memory"): a join step whose range
expansion would build more than a row budget of rows is split into pieces built one after
the other, each through the rest of the pattern and out to the writer before the next.

Pieces are consecutive rows (and, for one row with more candidates than the budget,
consecutive parts of its candidate range), so the matches come out in the very order the
unsplit step gives them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def range_pieces(low: np.ndarray, high: np.ndarray, budget: int
                 ) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """The rows with candidate ranges [low, high) as pieces expanding to at most `budget`
    rows each: (the rows' slice, their lows, their highs). A row whose own range passes the
    budget is a piece per `budget` candidates of its range."""
    counts = np.maximum(high - low, 0)
    if int(counts.sum()) <= budget:
        yield slice(0, len(low)), low, high
        return
    for rows in row_batches(counts, budget):
        if rows.stop - rows.start > 1 or counts[rows.start] <= budget:
            yield rows, low[rows], high[rows]
            continue
        first, last = int(low[rows.start]), int(high[rows.start])
        for begin in range(first, last, budget):
            yield rows, np.array([begin]), np.array([min(last, begin + budget)])


def row_batches(counts: np.ndarray, budget: int) -> Iterator[slice]:
    """Consecutive rows whose `counts` add up to at most `budget` (a row over it alone)."""
    ends = np.cumsum(counts)
    start = 0
    while start < len(counts):
        base = int(ends[start] - counts[start])
        stop = max(start + 1, int(np.searchsorted(ends, base + budget, "right")))
        yield slice(start, stop)
        start = stop

