"""Shared subevents (seed 002 §5.1, Algorithm 2) and the §6.4 experiment's behaviour."""

from __future__ import annotations

import random

import pytest

from cepplan.planner.compose import Settings
from cepplan.planner.shared import plan_workload
from cepplan.workload.loader import build_workload

TYPES = ["S1", "S2", "X1", "X2", "Y1", "Y2"]


def _section_6_4(rates: dict[str, float], window: float = 1.0):
    """Two complex events of three AND operators each, one shared: s = and(S1, S2)."""
    def pattern(name, structure):
        return {"name": name, "structure": ["AND", *structure], "within": window}

    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"x": "double"}} for t in TYPES},
        "patterns": [pattern("s", ["a:S1", "b:S2"]), pattern("x", ["a:X1", "b:X2"]),
                     pattern("y", ["a:Y1", "b:Y2"]), pattern("r1", ["s:s", "x:x"]),
                     pattern("r2", ["s:s", "y:y"])],
        "statistics": {"rates": rates}})


def _first_steps(outcome) -> list[frozenset[str]]:
    return [outcome.chosen[root].steps[0] for root in ("r1", "r2")]


@pytest.mark.parametrize(("shared_rate", "independent_first", "shared_first"), [
    (0.05, ["s", "s"], ["s", "s"]),   # rare shared part: monitored first anyway
    (0.33, ["x", "y"], ["s", "s"]),   # comparable: sharing moves it first and saves
    (3.0, ["x", "y"], ["x", "y"]),    # very frequent: non-shared parts first in both
])
def test_section_6_4_behaviour(shared_rate, independent_first, shared_first):
    rates = {"S1": shared_rate, "S2": shared_rate, **dict.fromkeys(TYPES[2:], 0.3)}
    workload = _section_6_4(rates)
    independent = plan_workload(workload, workload.statistics, Settings(), share=False)
    shared = plan_workload(workload, workload.statistics, Settings())
    assert _first_steps(independent) == [frozenset([v]) for v in independent_first]
    assert _first_steps(shared) == [frozenset([v]) for v in shared_first]
    if independent_first != shared_first:
        assert shared.total < 0.9 * independent.total
    else:
        assert shared.total == pytest.approx(independent.total)


def test_sharing_never_raises_the_total():
    rng = random.Random(5)
    for _ in range(15):
        rates = {t: rng.uniform(0.02, 2.0) for t in TYPES}
        workload = _section_6_4(rates, window=rng.uniform(0.5, 3.0))
        outcome = plan_workload(workload, workload.statistics, Settings())
        assert outcome.total <= outcome.independent_total + 1e-12


def test_a_filter_that_keeps_nothing_leaves_its_type_rate_to_the_other_patterns():
    """Pattern z's filter on A keeps no event; g still pushes every A (2/s) and C (1/s) event,
    and z never asks for B (its a never arrives): 3 events/s, whichever pattern comes first."""
    patterns = [{"name": "z", "structure": ["AND", "a:A", "b:B"], "where": ["a.x > 1"],
                 "within": 1},
                {"name": "g", "structure": ["AND", "a:A", "c:C"], "within": 1}]
    for order in (patterns, patterns[::-1]):
        workload = build_workload({
            "format": "cepplan.workload/1", "time_unit": "s",
            "event_types": {t: {"attributes": {"x": "double"}} for t in "ABC"},
            "patterns": order,
            "statistics": {"rates": {"A": 2.0, "B": 1.0, "C": 1.0},
                           "selectivities": {"z": {"a.x > 1": 0.0}}}})
        outcome = plan_workload(workload, workload.statistics, Settings())
        assert outcome.total == pytest.approx(3.0)
