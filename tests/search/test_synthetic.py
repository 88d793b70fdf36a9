"""The §6.1-like workload generator: comparison counts and how rates and selectivities fill
the seed's ranges, against the distributions' known quantiles."""

from __future__ import annotations

import math
import statistics

import pytest

from cepplan.search.synthetic import synthetic_workload


def _positives(pattern: dict) -> int:
    return sum(1 for o in pattern["structure"][1:] if not (isinstance(o, list) and o[0] == "NOT"))


def test_comparisons_half_the_size_by_default_and_a_share_of_the_pairs_on_request():
    for pattern in synthetic_workload(60, seed=3)["patterns"]:
        assert len(pattern["where"]) == max(1, _positives(pattern) // 2)
    for pattern in synthetic_workload(60, seed=3, pair_share=0.5)["patterns"]:
        m = _positives(pattern)
        assert len(pattern["where"]) == max(1, round(0.5 * m * (m - 1) / 2))


@pytest.mark.parametrize(("spread", "rate_median", "sel_median"), [
    ("uniform", (2 + 47) / 2, (0.003 + 0.92) / 2),
    ("log-uniform", math.sqrt(2 * 47), math.sqrt(0.003 * 0.92)),
])
def test_rates_and_selectivities_fill_the_seed_ranges_as_asked(spread, rate_median, sel_median):
    raw = synthetic_workload(400, n_types=60, seed=5, spread=spread)
    rates = list(raw["statistics"]["rates"].values())
    # one value per comparison made (a pair of types' value recurs; its use is independent
    # of its value, so the median is the distribution's)
    sels = [s for per in raw["statistics"]["selectivities"].values() for s in per.values()]
    assert all(1.99 <= r <= 47.01 for r in rates)
    assert all(0.003 <= s <= 0.92 for s in sels)
    assert len(sels) > 150
    assert statistics.median(sels) == pytest.approx(sel_median, rel=0.3)
    assert statistics.median(rates) == pytest.approx(rate_median, rel=0.3)


def test_few_types_cap_the_pattern_size_instead_of_looping():
    raw = synthetic_workload(50, n_types=4, seed=2, special=1.0)
    for pattern in raw["patterns"]:
        types = [o.split(":")[1] if isinstance(o, str) else o[1].split(":")[1]
                 for o in pattern["structure"][1:]]
        assert len(types) == len(set(types)) <= 4
