"""Per-step summaries against brute-force loops over the full occupancy sequence."""

from __future__ import annotations

import numpy as np
import pytest

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
