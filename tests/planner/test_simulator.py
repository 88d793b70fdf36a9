"""The cost model against the plan simulator on synthetic streams (seed 002 §4, §4.2, §6.1)."""

from __future__ import annotations

import itertools
from types import MappingProxyType

import pytest

from cepplan.costmodels.operators import plan_cost
from cepplan.planner.compose import Settings
from cepplan.planner.inputs import pattern_model
from cepplan.planner.optimize import optimize
from cepplan.planner.simulator import simulate
from cepplan.stats.synth import synthesize
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE
from cepplan.workload.loader import build_workload
from cepplan.workload.model import Statistics

SPARSE = {"A": 0.02, "B": 0.05, "C": 0.08, "D": 0.1}


def _workload(operator: str, n: int, window: float, statistics: dict) -> object:
    variables, types = "abcd"[:n], "ABCD"[:n]
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"x": "double"}} for t in "ABCD"},
        "patterns": [{"name": "p", "within": window,
                      "structure": [operator, *[f"{v}:{t}" for v, t in zip(variables, types,
                                                                            strict=True)]]}],
        "statistics": statistics})


@pytest.mark.parametrize("operator", ["AND", "SEQ"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_predicted_transmissions_match_simulation(operator, n):
    """Sparse Poisson streams (λW <= 0.1, where the seed's no-overlap model holds): predicted
    and simulated transmitted events within 10 %, for the in-order and reversed plans."""
    workload = _workload(operator, n, 1.0, {"rates": SPARSE})
    duration = 300_000
    events = synthesize(workload, duration=duration, seed=n, rates=SPARSE).events
    pattern = workload.patterns[0]
    model = pattern_model(workload, pattern, workload.statistics, {}, None)
    costs = {o.var: o.occurrence.rate for o in model.operands}
    for order in (pattern.variables, pattern.variables[::-1]):
        steps = tuple(frozenset([v]) for v in order)
        simulated = simulate(events, pattern, steps)
        predicted = plan_cost(model, steps, costs) * duration
        assert simulated.transmitted == pytest.approx(predicted, rel=0.10)
        # the pulled events alone, scaled by how many step-1 events this stream happened to have
        first = costs[order[0]]
        pushed = (events[EVENT_TYPE] == pattern.operand(order[0]).event_type).sum()
        pulled = (predicted - first * duration) * pushed / (first * duration)
        assert simulated.transmitted - pushed == pytest.approx(pulled, rel=0.15)
        assert simulated.minimum_transmission_factor <= simulated.transmission_factor <= 1


def test_simulator_finds_the_brute_force_matches_under_every_plan():
    """Plans change cost, never results: each plan of and/seq(a, b, c) finds every match."""
    rates = {"A": 0.3, "B": 0.3, "C": 0.3, "D": 0.1}
    for operator in ("AND", "SEQ"):
        workload = _workload(operator, 3, 2.0, {"rates": rates})
        events = synthesize(workload, duration=300, seed=9, rates=rates).events
        by_type = {t: events.loc[events[EVENT_TYPE] == t, EVENT_TS].tolist() for t in "ABC"}
        expected = 0
        for ta, tb, tc in itertools.product(by_type["A"], by_type["B"], by_type["C"]):
            in_window = max(ta, tb, tc) - min(ta, tb, tc) <= 2.0
            ordered = operator == "AND" or ta < tb < tc
            expected += in_window and ordered
        pattern = workload.patterns[0]
        for steps in [(frozenset("abc"),), (frozenset("c"), frozenset("a"), frozenset("b")),
                      (frozenset("b"), frozenset("ac"))]:
            assert simulate(events, pattern, steps).matches == expected > 0


def test_markov_model_predicts_a_bursty_stream_better_and_switches_the_plan():
    """seed 002 §4.2: and(e1, e2, w), e1 bursty and rarer than e2. The i.i.d. model keeps the
    naive plan; the Markov model sees overlapping pulls and picks e1 -> e2."""
    chain = [[0.98, 0.02], [0.1, 0.9]]
    stats = {"rates": {"B": 0.5}, "models": {"A": {"kind": "markov", "order": 1,
                                                   "time_step": 1, "transition": chain}}}
    bursty = _workload("AND", 2, 5.0, stats)
    rate_a = 0.02 / (0.02 + 0.1)
    iid_stats = Statistics(MappingProxyType({"A": rate_a, "B": 0.5}))
    settings = Settings()
    markov_plan = optimize(bursty, bursty.statistics, settings).plan.patterns["p"]
    iid_plan = optimize(bursty, iid_stats, settings).plan.patterns["p"]
    assert iid_plan.detection.steps == (frozenset("ab"),)
    assert markov_plan.detection.steps == (frozenset("a"), frozenset("b"))

    duration = 200_000
    events = synthesize(bursty, duration=duration, seed=3, rates={"B": 0.5}).events
    pattern = bursty.patterns[0]
    steps = (frozenset("a"), frozenset("b"))
    simulated = simulate(events, pattern, steps).transmitted / duration
    predictions = {}
    for name, statistics in (("markov", bursty.statistics), ("iid", iid_stats)):
        model = pattern_model(bursty, pattern, statistics, {}, None)
        costs = {o.var: o.occurrence.rate for o in model.operands}
        predictions[name] = plan_cost(model, steps, costs)
    assert abs(predictions["markov"] - simulated) < abs(predictions["iid"] - simulated)
    assert predictions["markov"] == pytest.approx(simulated, rel=0.10)
