"""Tree costs (seed 004 §3.3, App. C) against Monte Carlo counts of partial matches in a
window of a Poisson stream, and against matches counted by the runtime matcher."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cepplan.costmodels.trees import (
    cost_ord,
    cost_tree,
    cost_tree_multi,
    instances,
    kleene_rate,
    no_event_probability,
    node_cost,
)
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.workload.loader import build_workload

RNG = np.random.default_rng(7)


def test_seq_node_with_conditions_matches_monte_carlo():
    rates = {"a": 1.2, "b": 0.8, "c": 1.5, "d": 0.6}
    window, runs, total = 2.0, 12_000, 0
    for _ in range(runs):
        times = {v: RNG.uniform(0, window, RNG.poisson(r * window)) for v, r in rates.items()}
        diffs = {v: RNG.uniform(0, 1, len(t)) for v, t in times.items()}
        grid = np.meshgrid(*(np.arange(len(times[v])) for v in "abcd"), indexing="ij")
        if not grid[0].size:
            continue
        ta, tb, tc, td = (times[v][g] for v, g in zip("abcd", grid, strict=True))
        da, db, dc, dd = (diffs[v][g] for v, g in zip("abcd", grid, strict=True))
        total += int(np.sum((ta < tb) & (tb < tc) & (tc < td) & (da < db) & (dc < dd)))
    sels = {frozenset("ab"): 0.5, frozenset("cd"): 0.5}
    expected = node_cost("abcd", window, rates, sels, seq=True)
    assert total / runs == pytest.approx(expected, rel=0.08)


def test_and_node_with_kleene_matches_monte_carlo():
    """AND(a, b+): every a with every non-empty subset of b's events: r_a W (e^{r_b W} − 1)."""
    ra, rb, window, runs = 0.9, 0.7, 2.0, 40_000
    na = RNG.poisson(ra * window, runs)
    nb = RNG.poisson(rb * window, runs)
    measured = float(np.mean(na * (2.0 ** nb - 1)))
    rates = {"a": ra, "b": kleene_rate(rb, window, cap=16)}
    assert measured == pytest.approx(node_cost("ab", window, rates, {}, seq=False), rel=0.05)


def test_negation_probability_and_is_exact_and_seq_gap_a_lower_bound():
    rx, window, runs = 0.8, 2.0, 40_000
    free = np.mean(RNG.poisson(rx * window, runs) == 0)
    assert free == pytest.approx(no_event_probability(rx, window, "AND", 2, False), rel=0.05)
    # SEQ(a, NOT x, b, c): x must not fall between a and b; three uniform events in W
    times = np.sort(RNG.uniform(0, window, (runs, 3)), axis=1)
    gap = times[:, 1] - times[:, 0]
    truth = float(np.mean(np.exp(-rx * gap)))
    model = no_event_probability(rx, window, "SEQ", 3, False)
    assert model <= truth <= model * 1.15


def test_runtime_matches_per_time_unit_equal_k_times_c_over_w():
    """The matcher creates a SEQ(a,b,c) match whenever c completes a window: k·C(S)/W per
    time unit (docs/sharing.md)."""
    rates, window, horizon = {"A": 1.0, "B": 2.0, "C": 0.5}, 2.0, 8000.0
    rows = []
    for t, r in rates.items():
        for ts in RNG.uniform(0, horizon, RNG.poisson(r * horizon)):
            rows.append((t, float(ts)))
    rows.sort(key=lambda r: r[1])
    events = pd.DataFrame({"__type": [r[0] for r in rows], "__ts": [r[1] for r in rows],
                           "__id": range(len(rows)), "v": [0.0] * len(rows)})
    raw = {"format": "cepplan.workload/1", "name": "m", "time_unit": "s",
           "schemas": {"E": {"v": "double"}},
           "event_types": {t: {"schema": "E"} for t in rates},
           "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                         "within": f"{window}s"}],
           "statistics": {"rates": rates}}
    wl = build_workload(raw)
    found = len(run_local(events, job_from_json(job_data(wl, trivial_plan(wl)))).matches["p"])
    c_root = node_cost("abc", window, {"a": 1.0, "b": 2.0, "c": 0.5}, {}, seq=True)
    assert found / horizon == pytest.approx(3 * c_root / window, rel=0.1)


def test_cost_ord_tree_and_multi_are_the_seed_sums():
    rates = {"a": 2.0, "b": 3.0, "c": 0.5}
    sel = {frozenset("ab"): 0.1}
    w = 1.5
    by_hand = w * 2 + (w * 2) * (w * 3) * 0.1 + (w * 2) * (w * 3) * 0.1 * (w * 0.5)
    assert cost_ord("abc", w, rates, sel, seq=False) == pytest.approx(by_hand)
    assert cost_tree((("a", "b"), "c"), w, rates, sel, seq=False) == pytest.approx(
        by_hand + w * 3 + w * 0.5)
    def square(w):
        return w * w

    assert cost_tree_multi([("x", 1.0, square), ("x", 3.0, square), ("x", 2.0, square),
                            ("y", 1.0, lambda w: 2.0 * w)]) == pytest.approx(9.0 + 2.0)
    assert node_cost("abc", w, rates, sel, seq=True) == pytest.approx(
        node_cost("abc", w, rates, sel, seq=False) / math.factorial(3))


def test_instances_merge_common_prefixes_with_the_larger_window():
    """Seed 004 Fig. 5(a): SEQ(A,B,C) and SEQ(A,B,D), windows 10 and 20, share A and AB."""
    rates = {"A": 0.1, "B": 0.2, "C": 0.05, "D": 0.3}
    first = (("A", "B", "C"), 10.0, rates, {}, True)
    second = (("A", "B", "D"), 20.0, rates, {}, True)
    merged = instances([first, second])
    by_hand = (node_cost("A", 20.0, rates, {}, True) + node_cost("AB", 20.0, rates, {}, True)
               + node_cost("ABC", 10.0, rates, {}, True) + node_cost("ABD", 20.0, rates, {}, True))
    assert merged == pytest.approx(by_hand)
    apart = instances([(("B", "A", "C"), 10.0, rates, {}, True), second])
    assert apart == pytest.approx(cost_ord("BAC", 10.0, rates, {}, True)
                                  + cost_ord("ABD", 20.0, rates, {}, True))
