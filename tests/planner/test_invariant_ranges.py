"""The invariants pass against the full optimizer (docs/planner.md, "When a plan stops
holding"): on small random workloads, a statistic moved anywhere inside its recorded range
leaves every pattern's chosen steps as they were; moved 5 % beyond a finite bound, some
pattern's steps change."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.planner.compose import Settings
from cepplan.planner.invariant_ranges import MAX_FACTOR, RATE, SELECTIVITY, Statistic
from cepplan.planner.optimize import optimize
from cepplan.workload.loader import build_workload

TYPES = ("A", "B", "C", "D")
SETTINGS = Settings(time_limit=30)


def _rounded(value: float) -> float:
    return float(f"{value:.3g}")


@st.composite
def workloads(draw) -> dict:
    """One or two SEQ/AND patterns over 2-4 distinct types (the second maybe binding the
    first: a hierarchy), with a filter, a join condition and a latency bound each maybe, and
    inline rates and selectivities."""
    rates = {t: _rounded(10 ** draw(st.floats(-2, 1))) for t in TYPES}
    patterns, selectivities = [], {}
    for index in range(draw(st.integers(1, 2))):
        size = draw(st.integers(2, 4))
        types = draw(st.permutations(TYPES))[:size]
        variables = [f"v{i}" for i in range(size)]
        name = f"p{index}"
        operands = [f"{v}:{t}" for v, t in zip(variables, types, strict=True)]
        if index and draw(st.booleans()):  # a hierarchy: the second pattern binds the first
            operands[-1] = f"{variables[-1]}:p0"
        body = {"name": name, "structure": [draw(st.sampled_from(["SEQ", "AND"])), *operands],
                "within": f"{draw(st.integers(1, 30))}s", "where": [],
                "emit": {"x": f"{variables[0]}.x"}}
        own = {}
        if draw(st.booleans()):
            text = f"{variables[draw(st.integers(0, size - 1))]}.x > 0"
            body["where"].append(text)
            own[text] = _rounded(draw(st.floats(0.05, 0.9)))
        if draw(st.booleans()):
            text = f"{variables[0]}.x < {variables[1]}.x"
            body["where"].append(text)
            own[text] = _rounded(draw(st.floats(0.1, 0.9)))
        if draw(st.booleans()):
            body["latency"] = {"max_steps": draw(st.integers(1, 3))}
        patterns.append(body)
        selectivities[name] = own
    return {"format": "cepplan.workload/1", "name": "w", "time_unit": "s",
            "event_types": {t: {"attributes": {"x": "double"}} for t in TYPES},
            "patterns": patterns,
            "statistics": {"rates": rates, "selectivities": selectivities}}


def _steps(workload, statistics) -> dict:
    plan = optimize(workload, statistics, SETTINGS).plan
    return {name: p.detection.steps for name, p in plan.patterns.items()}


def _statistics(workload, invariants: dict) -> list[tuple[Statistic, dict]]:
    """Every statistic the invariants bound, with its range."""
    every = [(Statistic(RATE, (t,), invariants["basis"]["rates"][t], frozenset()), bounds)
             for t, bounds in invariants["rates"].items()]
    for pattern, ranges in invariants["selectivities"].items():
        for text, bounds in ranges.items():
            basis = invariants["basis"]["selectivities"][pattern][text]
            every.append((Statistic(SELECTIVITY, (pattern, text), basis, frozenset()), bounds))
    return every


@settings(max_examples=25)
@given(workloads(), st.data())
def test_inside_a_range_the_plan_holds_and_just_outside_it_changes(raw, data):
    workload = build_workload(raw)
    planned = optimize(workload, workload.statistics, SETTINGS).plan
    before = {name: p.detection.steps for name, p in planned.patterns.items()}
    statistic, bounds = data.draw(st.sampled_from(_statistics(workload, planned.invariants)))
    basis = statistic.basis
    ceiling = MAX_FACTOR * basis if statistic.kind == RATE else min(1.0, MAX_FACTOR * basis)
    low = bounds["low"] if bounds["low"] is not None else basis / MAX_FACTOR
    high = bounds["high"] if bounds["high"] is not None else ceiling
    assert low <= basis <= high
    inside = math.exp(data.draw(st.floats(math.log(low), math.log(high))))
    assert _steps(workload, statistic.at(workload.statistics, inside)) == before
    beyond = [bounds["low"] / 1.05] if bounds["low"] is not None else []
    if bounds["high"] is not None and bounds["high"] * 1.05 <= ceiling:
        beyond.append(bounds["high"] * 1.05)
    for value in beyond:
        assert _steps(workload, statistic.at(workload.statistics, value)) != before


@settings(max_examples=20)
@given(workloads(), st.data())
def test_a_statistic_measured_0_holds_up_to_a_usable_bound(raw, data):
    """A rate or selectivity of 0 is planned at its floor: its range reaches from 0 to a
    positive bound (not [0, 0]), the plan holds anywhere below it and changes just above."""
    workload = build_workload(raw)
    planned = optimize(workload, workload.statistics, SETTINGS).plan
    statistic, _ = data.draw(st.sampled_from(_statistics(workload, planned.invariants)))
    zeroed = statistic.at(workload.statistics, 0.0)
    plan = optimize(workload, zeroed, SETTINGS).plan
    before = {name: p.detection.steps for name, p in plan.patterns.items()}
    kind = "rates" if statistic.kind == RATE else "selectivities"
    ranges = plan.invariants[kind] if statistic.kind == RATE else \
        plan.invariants[kind][statistic.key[0]]
    bounds = ranges[statistic.key[-1]]
    assert bounds["low"] is None
    highest = max(zeroed.rates.values())  # the other types' highest: the zeroed one is 0
    floor = 1e-6 * (highest if statistic.kind == RATE else 1)
    top = MAX_FACTOR * highest if statistic.kind == RATE else 1.0  # as far as it is probed
    high = bounds["high"] if bounds["high"] is not None else top
    assert high > floor
    inside = math.exp(data.draw(st.floats(math.log(floor), math.log(high))))
    assert _steps(workload, statistic.at(zeroed, inside)) == before
    if bounds["high"] is not None and bounds["high"] * 1.05 <= top:
        assert _steps(workload, statistic.at(zeroed, bounds["high"] * 1.05)) != before


def test_a_plan_that_changes_and_changes_back_gets_the_first_change_as_its_bound():
    """A hierarchy's parent whose plan changes between 12x and 300x the rate of D and is the
    first again at 1000x (found by the test above): testing the side's far end alone said
    the plan holds for any rate of D above its low bound."""
    raw = {"format": "cepplan.workload/1", "name": "w", "time_unit": "s",
           "event_types": {t: {"attributes": {"x": "double"}} for t in "ABCD"},
           "patterns": [{"name": "p0", "structure": ["AND", "v0:D", "v1:B", "v2:C"],
                         "within": "14s", "emit": {"x": "v0.x"}},
                        {"name": "p1", "structure": ["SEQ", "v0:D", "v1:B", "v2:p0"],
                         "within": "10s", "emit": {"x": "v0.x"}}],
           "statistics": {"rates": {"A": 1.0, "B": 1.0, "C": 0.167, "D": 1.0}}}
    workload = build_workload(raw)
    planned = optimize(workload, workload.statistics, SETTINGS).plan
    before = {name: p.detection.steps for name, p in planned.patterns.items()}
    (statistic, bounds), = [(s, b) for s, b in _statistics(workload, planned.invariants)
                            if s.key == ("D",)]
    assert _steps(workload, statistic.at(workload.statistics, 20.0)) != before
    assert bounds["high"] is not None and bounds["high"] < 20.0
    assert _steps(workload, statistic.at(workload.statistics, bounds["high"])) == before
