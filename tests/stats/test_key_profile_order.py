"""The key profile (stats.json `keyed.PATTERN.profile`) does not depend on the order an engine
hands the keys over in: the Spark job's aggregation and the in-process counts list them
differently, and the classes once came out in each one's order of first appearance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.stats.keyed import key_profile


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 3), st.sampled_from([20, 400, 3000]))
def test_the_profile_is_the_same_whatever_the_key_order(seed, types, keys):
    """Per-key counts of 1-3 types, Zipf-like (many classes; 3,000 keys over 3 types pass the
    128 classes the bins allow), shuffled: the same classes, in the same order."""
    rng = np.random.default_rng(seed)
    per_key = np.floor(rng.pareto(1.1, (keys, types)) * rng.integers(1, 50, types))
    per_key[rng.random((keys, types)) < 0.2] = 0
    names = [f"T{i}" for i in range(types)]
    shuffled = per_key[rng.permutation(keys)]
    assert key_profile(shuffled, names, 100.0) == key_profile(per_key, names, 100.0)
    total = sum(c["keys"] * np.array(c["counts"]) for c in key_profile(per_key, names, 100.0)[
        "classes"])
    assert np.allclose(total, per_key.sum(axis=0))  # every key in one class
