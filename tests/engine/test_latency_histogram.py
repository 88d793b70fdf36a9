"""Detection latencies in constant memory: the histogram's percentiles against NumPy's exact
ones over every value (hypothesis), its count and maximum exact, its size fixed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.runtime.latency_histogram import LatencyHistogram

# up to a day; beyond it, the maximum stands for a latency
LATENCY = st.one_of(st.floats(0.0, 1e-5), st.floats(1e-5, 8e4))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(LATENCY, min_size=0, max_size=40), min_size=1, max_size=6))
def test_percentiles_within_half_a_percent_of_the_exact_ones(pieces):
    histogram = LatencyHistogram()
    for piece in pieces:
        histogram.add(np.array(piece, dtype=np.float64))
    values = np.concatenate([np.array(p, dtype=np.float64) for p in pieces])
    if not len(values):
        assert histogram.count == 0
        return
    figures = histogram.figures()
    assert figures["matches"] == len(values)
    assert figures["max"] == round(float(values.max()), 6)
    for q, key in ((50, "p50"), (99, "p99")):
        exact = float(np.percentile(values, q))
        assert abs(histogram.percentile(q) - exact) <= 0.005 * exact + 1e-6, (q, exact)
        assert figures[key] == round(histogram.percentile(q), 6)


def test_its_memory_does_not_grow_with_the_matches():
    histogram = LatencyHistogram()
    size = histogram.counts.nbytes
    rng = np.random.default_rng(1)
    for _ in range(20):
        histogram.add(rng.lognormal(-2, 2, 100_000))
    assert histogram.counts.nbytes == size and histogram.count == 2_000_000
