"""A strict Kleene variable (strategy strict: its events back to back in the partition) in the
cost models: it stands for its runs, r_b · Σ_{k=n}^{m} p^(k−1) with p = r_b / R its share of
the partition's events, not for every subset of its events in a window. Checked against runs
counted one by one on simulated Poisson streams, and against the matches `cepplan run` finds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from cepplan.costmodels.trees import kleene_rate
from tests.costmodels.test_bounded_repetition import poisson_csv, write_workload
from tests.costmodels.test_join_orders import planned_and_measured

TOLERANCE = 0.10


def poisson_types(rates: dict[str, float], duration: float, seed: int) -> list[str]:
    """The types of a stream of independent Poisson processes, in time order."""
    rng = np.random.default_rng(seed)
    stamps, kinds = [], []
    for kind, rate in rates.items():
        count = rng.poisson(rate * duration)
        stamps += rng.uniform(0, duration, count).tolist()
        kinds += [kind] * count
    return [kinds[i] for i in np.argsort(stamps)]


def counted_runs(types: list[str], kind: str, least: int, most: int) -> int:
    """Runs of `least` to `most` back-to-back `kind` events, counted at each event they end
    at: the events before it of that kind, one by one."""
    runs = 0
    for end, event in enumerate(types):
        if event != kind:
            continue
        length = 1
        while length < most and end - length >= 0 and types[end - length] == kind:
            length += 1
        runs += max(0, length - least + 1)
    return runs


@pytest.mark.parametrize(("rates", "least", "most"), [
    ({"A": 1.0, "B": 3.0}, 1, None),
    ({"A": 1.0, "B": 1.0, "C": 2.0}, 1, None),
    ({"A": 0.5, "B": 2.0, "C": 0.5}, 2, 4),
    ({"A": 1.0, "B": 1.0}, 3, None),
])
def test_the_rate_counts_the_runs_of_a_simulated_stream(rates, least, most):
    """Monte Carlo: the effective rate times the stream's length is the number of runs of
    n to m back-to-back B events (m: the cap when unbounded) in a Poisson stream."""
    duration, cap = 4000.0, 6
    types = poisson_types(rates, duration, seed=3)
    counted = counted_runs(types, "B", least, cap if most is None else min(most, cap))
    modelled = kleene_rate(rates["B"], 2.0, cap, least, most, sum(rates.values())) * duration
    assert modelled == pytest.approx(counted, rel=TOLERANCE)


def test_a_strict_kleene_rate_stays_below_the_subsets():
    """Runs are far fewer than subsets: B+ at 2 of 4 events per time unit, in a window of
    2, has 2 · Σ 0.5^(k−1) ≈ 4 runs per time unit against (e^4 − 1)/2 ≈ 26.8 subsets."""
    assert kleene_rate(2.0, 2.0, 16, partition_rate=4.0) == pytest.approx(4 * (1 - 0.5**16))
    assert kleene_rate(2.0, 2.0, 16) == pytest.approx(math.expm1(4.0) / 2)


RATES = {"A": 1.0, "B": 2.0, "C": 1.0, "D": 0.5}  # D: in the partition, in no pattern
WINDOW = 2.0
DURATION = 4000.0


@pytest.mark.parametrize(("least", "most"), [(1, None), (2, 3)])
def test_modelled_runs_are_the_measured_matches(tmp_path: Path, least, most):
    """SEQ(a, b+, c) strict: a match is an a, then a run of B events, then a c, back to back,
    so of R = Σ rates events per time unit, r_c · (r_a/R) · Σ_k (r_b/R)^k complete one, i.e.
    r_a · r_c · r_eff / R² with r_eff the runs' rate. The plan's last join step holds
    W³ · r_a · r_eff · r_c / 3! partial matches per window (the runs, before the strict
    neighbours are checked): the r_eff it models is the one the run's matches measure."""
    bounds = {"min": least, **({"max": most} if most else {})}
    write_workload(tmp_path / "w.json", RATES, {
        "name": "p", "within": WINDOW, "strategy": "strict",
        "structure": ["SEQ", "a:A", ["KLEENE", "b:B", bounds], "c:C"]})
    poisson_csv(tmp_path / "events.csv", RATES, DURATION)
    modelled, metrics = planned_and_measured(tmp_path)
    assert not metrics["kleene_cap_hits"]["p"]
    first, last = metrics["input_span"]
    total = sum(RATES.values())
    measured_runs = metrics["matches"]["p"] / (last - first) * total**2 / (RATES["A"] * RATES["C"])
    modelled_runs = (modelled["partial_matches_per_window"][-1] * math.factorial(3)
                     / (WINDOW**3 * RATES["A"] * RATES["C"]))
    assert modelled_runs == pytest.approx(measured_runs, rel=TOLERANCE)
