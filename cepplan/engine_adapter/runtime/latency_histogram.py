"""Detection latencies of a stream that does not end, in constant memory: counts in
log-spaced bins 1 % apart from 1 µs to a day (2,500 bins), the exact count and maximum.
Percentiles come within 0.5 % of the exact ones (NumPy's interpolation between order
statistics), or 1 µs; beyond a day the maximum stands for a latency. Keeping every match's
latency instead grew the stream's memory with its matches (docs/engine.md, "Live streams")."""

from __future__ import annotations

import math

import numpy as np

LOWEST = 1e-6  # seconds: the first bin holds everything up to it
RATIO = 1.01  # each bin's upper edge over its lower edge
BINS = math.ceil(math.log(86_400 / LOWEST) / math.log(RATIO)) + 2  # the last: beyond a day


class LatencyHistogram:
    """Latencies in seconds, added array by array; `figures()` gives count, p50, p99, max."""

    def __init__(self) -> None:
        self.counts = np.zeros(BINS, dtype=np.int64)
        self.count = 0
        self.lowest = math.inf
        self.highest = -math.inf

    def add(self, seconds: np.ndarray) -> None:
        """Count each latency in its bin."""
        if not len(seconds):
            return
        values = np.asarray(seconds, dtype=np.float64)
        bins = np.ones(len(values), dtype=np.int64)
        above = values > LOWEST
        bins[above] += np.floor(np.log(values[above] / LOWEST) / math.log(RATIO)).astype(
            np.int64)
        bins[~above] = 0
        self.counts += np.bincount(np.minimum(bins, BINS - 1), minlength=BINS)
        self.count += len(values)
        self.lowest = min(self.lowest, float(values.min()))
        self.highest = max(self.highest, float(values.max()))

    def percentile(self, q: float) -> float:
        """The q-th percentile (0-100), interpolated between order statistics as NumPy's
        default: each order statistic read as its bin's geometric middle, kept within the
        exact minimum and maximum."""
        rank = q / 100 * (self.count - 1)
        below = math.floor(rank)
        fraction = rank - below
        cumulative = np.cumsum(self.counts)
        low, high = (self._order_statistic(cumulative, k) for k in (below, below + 1))
        return low + fraction * (high - low) if fraction else low

    def _order_statistic(self, cumulative: np.ndarray, k: int) -> float:
        k = min(k, self.count - 1)
        index = int(np.searchsorted(cumulative, k, side="right"))
        if index == BINS - 1:  # beyond a day: only the maximum is known there
            return self.highest
        middle = LOWEST if index == 0 else LOWEST * RATIO ** (index - 0.5)
        return min(max(middle, self.lowest), self.highest)

    def figures(self) -> dict[str, float | int]:
        """matches, p50, p99 and max in seconds (as `arrivals.latency_figures`)."""
        return {"matches": self.count, "p50": round(self.percentile(50), 6),
                "p99": round(self.percentile(99), 6), "max": round(self.highest, 6)}
