"""The evaluation search under contexts: patterns that never run at the same time share
nothing, patterns of one grouped window still do, and the sharing search runs per group."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cepplan.planner.compose import Settings
from cepplan.planner.evaluation import EvaluationSettings
from cepplan.planner.optimize import optimize
from cepplan.workload import build_workload
from cepplan.workload.model import Statistics

SEARCH = EvaluationSettings(search="tabu", time_limit=5.0)
STATS = Statistics(rates={"A": 1.0, "B": 2.0, "C": 0.5, "D": 0.1})


def _workload():
    """Two contexts that switch back and forth, each with two copies of one SEQ pattern."""
    patterns, types, transitions = [], {}, []
    for c in range(2):
        names = [f"p{c}_{j}" for j in range(2)]
        patterns += [{"name": n, "structure": ["SEQ", "a:A", "b:B", "c:C"],
                      "where": ["a.v < b.v", "b.v < c.v"], "within": 10} for n in names]
        patterns.append({"name": f"leave_{c}", "structure": ["SEQ", "x:D"],
                         "where": [f"x.v == {c}"]})
        types[f"c{c}"] = {"patterns": [*names, f"leave_{c}"]}
        transitions.append({"on": f"leave_{c}", "action": "switch", "from": f"c{c}",
                            "to": f"c{1 - c}"})
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "double"}} for t in "ABCD"},
        "patterns": patterns,
        "contexts": {"initial": "c0", "types": types, "transitions": transitions}})


def _users(plan) -> list[set[str]]:
    return [set(node["users"]) for node in plan.sharing["shared"]]


def test_patterns_of_contexts_that_never_hold_together_share_nothing():
    workload = _workload()
    aware = optimize(workload, STATS, Settings(), evaluation_settings=SEARCH).plan
    independent = optimize(replace(workload, contexts=None), STATS, Settings(),
                           evaluation_settings=SEARCH).plan
    # context-independent: all four copies are identical, so one subtree serves them all
    assert any(users == {"p0_0", "p0_1", "p1_0", "p1_1"} for users in _users(independent))
    # context-aware: c0 and c1 never hold together; each context's copies still share
    users = _users(aware)
    assert users, "the copies within one context must still share"
    for group in users:
        assert {name[:2] for name in group} in ({"p0"}, {"p1"})
    assert {"p0_0", "p0_1"} in users and {"p1_0", "p1_1"} in users
    # the graph compares only pairs that can run together: 1 per context instead of 6
    assert aware.sharing["search"]["graph_edges"] == 2
    assert independent.sharing["search"]["graph_edges"] == 6
    # the model prices the two contexts' subtrees separately: twice the shared cost
    assert aware.sharing["modelled_cost"]["chosen"] == pytest.approx(
        2 * independent.sharing["modelled_cost"]["chosen"])
