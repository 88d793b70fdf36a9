"""The selectivity code's fast paths give exactly what the plain NumPy / pandas calls they
replace give, so stats.json does not change: the guided weighted draws against
`Generator.choice`, the partition numbers against factorizing every row's text."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cepplan.stats.selectivity import partition_codes, weighted_draws


@pytest.mark.parametrize("seed", range(60))
def test_weighted_draws_are_generator_choice(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20)) if seed % 3 == 0 else int(rng.integers(1, 60_000))
    weights = rng.integers(0, 5, n) * rng.random(n)
    if seed % 5 == 0:
        weights[rng.random(n) < 0.9] = 0  # long runs of equal sums: wide guide buckets
    if seed % 7 == 0:
        weights[: n // 2] *= 1e-12
    weights[int(rng.integers(0, n))] += 1
    p = weights / weights.sum()
    size = int(rng.integers(1, 100_000))
    expected = np.random.default_rng(seed + 7).choice(n, size=size, p=p)
    assert np.array_equal(weighted_draws(np.random.default_rng(seed + 7), p, size), expected)


def test_partition_codes_are_those_of_the_rows_texts():
    rng = np.random.default_rng(3)
    n = 1_000
    mixed = np.array([1, "1", 2.0, "2.0", True, "True"], dtype=object)[rng.integers(0, 6, n)]
    frame = pd.DataFrame({
        "text": rng.choice(["k1", "k2", "1"], n).astype(object),
        "int": rng.integers(0, 5, n),
        "nullable": pd.array(rng.integers(0, 4, n), dtype="Int64"),
        "float": np.array([0.0, -0.0, 1.5])[rng.integers(0, 3, n)],
        "flag": pd.array(rng.integers(0, 2, n).astype(bool), dtype="boolean"),
        "mixed": mixed,  # 1 == True == 1.0 as values, not as text
        "nulls": np.array([None, "x", np.nan, "nan"], dtype=object)[rng.integers(0, 4, n)],
    })
    for columns in (["text"], ["int", "text"], ["nullable", "float"], ["flag", "mixed"],
                    ["nulls"], ["text", "nulls"]):
        texts = pd.MultiIndex.from_frame(frame[columns].astype(str))
        assert np.array_equal(partition_codes(frame, columns),
                              pd.factorize(texts)[0].astype(np.float64)), columns
