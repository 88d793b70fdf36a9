"""Bounded repetition b{n,m} in the cost models: a Kleene variable of n to m events stands for
its subsets of that size (Σ_{k=n}^{m} (rW)^k/k! per window), not for every subset as
Kleene+. Checked against a brute-force count of the subsets over Poisson counts, and against
the matches `cepplan run` finds on a Poisson stream with known rates within 10 %."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.costmodels.trees import kleene_rate
from tests.costmodels.test_join_orders import planned_and_measured

RATES = {"A": 0.5, "B": 2.0}
WINDOW = 2.0  # 4 B events per window on average: sets of 3 to 5 vary by 4 % over the stream
DURATION = 8000.0
TOLERANCE = 0.10


def brute_force_sets(events: int, least: int, most: int | None) -> int:
    """The subsets of `events` events with `least` to `most` of them, counted one by one
    (up to 16 events; binomial coefficients beyond, where enumerating would take minutes)."""
    top = events if most is None else min(most, events)
    if events > 16:
        return sum(math.comb(events, size) for size in range(least, top + 1))
    return sum(1 for size in range(least, top + 1)
               for _ in itertools.combinations(range(events), size))


def poisson_expectation(lam: float, count: callable, upto: int) -> float:
    """E[count(N)] for N ~ Poisson(lam), summed over N = 0 .. upto (the rest negligible)."""
    return sum(math.exp(-lam) * lam**n / math.factorial(n) * count(n) for n in range(upto + 1))


@settings(max_examples=40, deadline=None)
@given(lam=st.floats(0.1, 4.0), least=st.integers(1, 4), extra=st.one_of(
    st.none(), st.integers(0, 4)))
def test_the_rate_counts_the_subsets_of_allowed_sizes(lam, least, extra):
    """Far below the cap, the effective rate times the window is the expected number of
    subsets of n to m events among a window's Poisson count of them."""
    most = None if extra is None else least + extra
    # up to 40 events: with Kleene+ at 4 events per window the sets of 19 or more events
    # still add 0.1 % (summed only to 18, the reference fell short of the model by that)
    expected = poisson_expectation(lam, lambda n: brute_force_sets(n, least, most), 40)
    assert kleene_rate(lam, 1.0, 30, least, most) == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize(("least", "most"), [(1, 1), (2, 3), (1, 2), (3, 5), (2, None)])
@pytest.mark.parametrize("cap", [3, 4])
def test_the_cap_bounds_the_sets_as_the_runtime_enumerates_them(least, most, cap):
    """With many events in a window, the runtime enumerates the sets of its `cap` latest:
    the rate never exceeds those sets (counted by brute force), and reaches them."""
    enumerable = brute_force_sets(cap, least, most)
    assert kleene_rate(1e3, 1.0, cap, least, most) == pytest.approx(enumerable)
    assert kleene_rate(2.0, 1.0, cap, least, most) <= enumerable


def test_kleene_plus_keeps_its_rate():
    """Kleene+ (1 to no most) is (e^{rW} − 1)/W, at most (2^cap − 1)/W."""
    assert kleene_rate(1.5, 2.0, 16) == pytest.approx(math.expm1(3.0) / 2.0, rel=1e-12)
    assert kleene_rate(50.0, 1.0, 16) == pytest.approx(2**16 - 1, rel=1e-12)
    assert kleene_rate(1.0, 1.0, 3, 4, None) == 0.0  # 4 events never held with a cap of 3


def write_workload(path: Path, rates: dict[str, float], pattern: dict) -> None:
    """A workload of one pattern over attribute-less types at known `rates`, read from CSV."""
    path.write_text(json.dumps({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "event", "time_column": "ts"},
        "event_types": {t: {"attributes": {}} for t in rates},
        "statistics": {"rates": rates}, "patterns": [pattern]}))


def poisson_csv(path: Path, rates: dict[str, float] = RATES, duration: float = DURATION) -> None:
    """Each type a Poisson process at `rates` over `duration`, as CSV."""
    rng = np.random.default_rng(11)
    rows = []
    for kind, rate in rates.items():
        count = rng.poisson(rate * duration)
        rows += zip([kind] * count, rng.uniform(0, duration, count).tolist(), strict=True)
    rows.sort(key=lambda r: r[1])
    path.write_text("event,ts\n" + "".join(f"{k},{t!r}\n" for k, t in rows))


@pytest.mark.parametrize(("least", "most"), [(1, 1), (2, 3), (1, 3), (3, 5)])
def test_modelled_sets_are_the_measured_matches(tmp_path: Path, least, most):
    """SEQ(a, b{n,m}): every a with each set of n to m B events in its window, r_a ·
    Σ_{k=n}^{m} (r_b W)^k/k! per time unit. The plan's partial matches of its last join
    step (a and b's sets, per window) are the matches the run finds, per window (a match
    of 2 variables completes at 2·C/W per time unit, docs/sharing.md)."""
    bounds = {"min": least, **({"max": most} if most else {})}
    write_workload(tmp_path / "w.json", RATES, {"name": "p", "within": WINDOW, "structure": [
        "SEQ", "a:A", ["KLEENE", "b:B", bounds]]})
    poisson_csv(tmp_path / "events.csv")
    modelled, metrics = planned_and_measured(tmp_path)
    assert not metrics["kleene_cap_hits"]["p"]
    first, last = metrics["input_span"]
    measured = metrics["matches"]["p"] * WINDOW / ((last - first) * 2)
    assert modelled["partial_matches_per_window"][-1] == pytest.approx(measured,
                                                                       rel=TOLERANCE)
