"""Hierarchical composition (seed 002 §3.2.3): with every Pareto plan propagated it finds the
global optimum; every operator kind gets a plan; solver choice and fallback are reported."""

from __future__ import annotations

import json

import pytest

from cepplan.planner.candidates import Option, evaluate
from cepplan.planner.compose import Settings, compose, select
from cepplan.planner.optimize import optimize
from cepplan.stats.stats_file import read_stats
from cepplan.workload.loader import build_workload, load_workload
from tests.conftest import EXAMPLES
from tests.planner.brute import ordered_partitions

RATES = {"A": 0.4, "B": 1.5, "C": 0.2, "D": 2.5, "E": 0.9, "F": 3.0}


def _hierarchy(bound: int | None):
    root = {"name": "root", "structure": ["AND", "x:c1", "y:c2", "z:E"], "within": 3.0}
    if bound:
        root["latency"] = {"max_steps": bound}
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "double"}} for t in RATES},
        "patterns": [{"name": "c1", "structure": ["AND", "a:A", "b:B"], "within": 1.0},
                     {"name": "c2", "structure": ["SEQ", "c:C", "d:D", "f:F"], "within": 2.0},
                     root],
        "statistics": {"rates": RATES}})


@pytest.mark.parametrize("bound", [1, 2, 3, 4, 6])
def test_composition_with_unlimited_k_is_globally_optimal(bound):
    workload = _hierarchy(bound)
    results = compose(workload, workload.statistics, Settings(k=None))
    chosen = select(workload, results)["root"]
    # brute force: every plan of each child (not only its Pareto front) under every root plan
    every_child = {}
    for child in ("c1", "c2"):
        model, options = results[child].model, results[child].options
        every_child[child] = [evaluate(model, steps, options, dict.fromkeys(options, 0))
                              for steps in ordered_partitions(tuple(options))]
    root = results["root"]
    options = {"x": [Option(p.cost, p.latency) for p in every_child["c1"]],
               "y": [Option(p.cost, p.latency) for p in every_child["c2"]],
               "z": root.options["z"]}
    best = min(evaluate(root.model, steps, options, {"x": i, "y": j, "z": 0}).cost
               for steps in ordered_partitions(("x", "y", "z"))
               for i in range(len(options["x"])) for j in range(len(options["y"]))
               if evaluate(root.model, steps, options, {"x": i, "y": j, "z": 0}).latency
               <= bound)
    assert chosen.cost == pytest.approx(best, rel=1e-9)
    assert chosen.latency <= bound


def test_every_operator_kind_gets_a_plan():
    workload = build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "double"}} for t in RATES},
        "patterns": [
            {"name": "k", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"], "within": 2,
             "where": ["a.v < 5"]},
            {"name": "n", "structure": ["AND", "a:A", ["NOT", "d:D"], "e:E"], "within": 1},
            {"name": "o", "structure": ["OR", "x:k", "f:F"]},
            {"name": "top", "structure": ["SEQ", "o:o", "n:n"], "within": 5}],
        "statistics": {"rates": RATES, "selectivities": {"k": {"a.v < 5": 0.1}}}})
    plan = optimize(workload, workload.statistics, Settings()).plan
    assert set(plan.patterns) == {"k", "n", "o", "top"}
    assert plan.patterns["o"].solver == "naive"
    assert plan.patterns["o"].detection.steps == (frozenset({"x", "f"}),)
    assert plan.patterns["o"].naive_cost == pytest.approx(
        plan.patterns["k"].naive_cost + RATES["F"])
    # the filter keeps 10 % of A: pushing a first and pulling the frequent b, c is cheaper
    assert plan.patterns["k"].detection.steps[0] == frozenset({"a"})
    negated = plan.patterns["n"].detection.steps
    assert frozenset({"d"}) == negated[-1] or negated == (frozenset("ade"),)


def test_auto_solver_and_dp_time_limit_fallback():
    workload = _hierarchy(None)
    small = compose(workload, workload.statistics, Settings(dp_limit=2))
    assert small["c1"].solver == "dp" and small["c2"].solver == "heuristic"
    # no time at all: every pattern gets its naive plan, the best found so far
    timed_out = compose(workload, workload.statistics, Settings(solver="dp", time_limit=0.0))
    assert timed_out["c2"].solver == "naive (time limit reached)"
    assert timed_out["c2"].front[0].steps == (frozenset(timed_out["c2"].options),)


def test_stats_file_overrides_inline_rates(tmp_path):
    path = EXAMPLES / "stocks" / "workload.json"
    workload = load_workload(path)
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({"format": "cepplan.stats/1", "rates": {"GOOG": 0.01}}))
    inline = optimize(workload, workload.statistics, Settings()).plan.patterns["google_ascend"]
    measured = optimize(workload, read_stats(stats, workload), Settings(), str(stats))
    # a, b, c are all GOOG: the naive plan sends each GOOG event once
    assert measured.plan.patterns["google_ascend"].naive_cost == pytest.approx(0.01)
    assert inline.naive_cost == pytest.approx(0.7)


def test_workload_total_sends_each_event_once_across_patterns():
    """stocks: AAPL, AMZN and GOOG are pushed unfiltered by some pattern; MSFT only through
    sector_rally's filter (selectivity 0.5): 0.9 + 0.4 + 0.7 + 0.6 * 0.5 events/min."""
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    outcome = optimize(workload, workload.statistics, Settings()).outcome
    assert outcome.total == pytest.approx(0.9 + 0.4 + 0.7 + 0.3)
    assert outcome.naive_total == pytest.approx(0.9 + 0.4 + 0.7 + 0.3)
