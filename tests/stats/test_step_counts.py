"""Per-step summaries against brute-force loops over the full occupancy sequence."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.stats import step_counts
from cepplan.stats.step_counts import block_counts, count_histogram, transition_counts


@pytest.mark.parametrize("order", [1, 2, 3])
def test_transition_counts_match_a_loop(order):
    rng = np.random.default_rng(order)
    first, last = 5, 400
    occupied = rng.random(last - first + 1) < 0.3
    steps = np.flatnonzero(occupied) + first
    expected = np.zeros((2 ** order, 2))
    for t in range(first + order, last + 1):
        state = 0
        for j in range(order, 0, -1):  # oldest first = most significant bit
            state = state * 2 + int(occupied[t - j - first])
        expected[state, int(occupied[t - first])] += 1
    assert np.array_equal(transition_counts(steps, first, last, order), expected)


def test_histogram_and_blocks():
    counts = np.array([1, 3, 1, 2, 1])
    assert count_histogram(counts) == {1: 3, 2: 1, 3: 1}
    steps = np.array([0, 1, 5, 9, 10])
    got = block_counts(steps, counts, 1.0, 0.0, 5.0, 2)
    assert got.tolist() == [4.0, 4.0]  # steps 0,1 -> block 0; 5,9,10 -> block 1 (clipped)


@pytest.mark.parametrize("order", [1, 3])
def test_sparse_and_dense_transition_counts_agree(order):
    """A few steps over a long range take the general path; the occupancy-array path (used
    for short ranges) must count the same windows."""
    from cepplan.stats.step_counts import _dense_transition_counts

    rng = np.random.default_rng(order)
    first, last = 10, 3_000_000
    steps = np.unique(rng.integers(first, last + 1, 2_000))
    steps = np.concatenate([steps, steps[-5:] + 1, steps[-3:] + 2])  # some runs
    steps = np.unique(steps[steps <= last])
    assert np.array_equal(transition_counts(steps, first, last, order),
                          _dense_transition_counts(steps, first, last, order))


def test_histogram_of_large_counts_as_of_small():
    rng = np.random.default_rng(4)
    small = rng.poisson(3, 1_000)
    large = np.concatenate([small, [10 ** 9]])  # too large for the bincount path
    expected = {c: int((small == c).sum()) for c in set(small.tolist()) if c >= 1}
    assert count_histogram(small) == expected
    assert count_histogram(large) == {**expected, 10 ** 9: 1}


def _loop_transitions(steps: np.ndarray, first: int, last: int, order: int) -> np.ndarray:
    """Transition counts by walking every step of the range (the reference)."""
    occupied = np.zeros(last - first + 1, dtype=bool)
    occupied[steps - first] = True
    expected = np.zeros((2 ** order, 2))
    for t in range(first + order, last + 1):
        state = 0
        for j in range(order, 0, -1):
            state = state * 2 + int(occupied[t - j - first])
        expected[state, int(occupied[t - first])] += 1
    return expected


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 9), st.integers(0, 2 ** 32 - 1),
       st.sampled_from([0.05, 0.5, 0.95]))
def test_chunked_transition_counts_equal_a_loop(order, chunk, seed, density):
    """Steps summarised a few at a time (the chunk made tiny, so that windows straddle
    chunks and runs of occupied steps cross them) count the same windows as a loop."""
    rng = np.random.default_rng(seed)
    first, last = 3, 3 + int(rng.integers(order, 300))
    steps = np.flatnonzero(rng.random(last - first + 1) < density) + first
    expected = _loop_transitions(steps, first, last, order)
    original = step_counts.TRANSITION_CHUNK
    step_counts.TRANSITION_CHUNK = chunk
    try:
        got = transition_counts(steps.astype(np.int32), first, last, order)
    finally:
        step_counts.TRANSITION_CHUNK = original
    assert np.array_equal(got, expected)


def test_transition_counts_of_a_long_span_hold_chunk_sized_arrays():
    """Four million occupied steps scattered over 10^11 steps (a long span at a fine step):
    the working arrays are a chunk's, not a multiple of the steps' (the steps alone take
    32 MB as int64; the one-go path peaked near 300 MB); the figures are the one-go path's."""
    rng = np.random.default_rng(7)
    steps = np.unique(rng.integers(0, 10 ** 11, 4_000_000))
    first, last = 0, 10 ** 11 - 1
    tracemalloc.start()
    try:
        got = transition_counts(steps, first, last, 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2 ** 20, peak
    assert np.array_equal(got, step_counts._whole_transition_counts(steps, first, last, 2))
