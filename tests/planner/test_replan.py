"""`replan` (docs/planner.md, "Re-planning"): a new plan for drifted statistics, what changed
and the modelled gain; refused, the old plan kept, when it cannot be made."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.planner.replan import ReplanRefused, replan
from cepplan.workload.loader import build_workload, load_workload
from cepplan.workload.model import Statistics
from tests.conftest import EXAMPLES

FRAUD = EXAMPLES / "fraud" / "workload.json"


def _plan(workload, **settings) -> dict:
    """The plan document `cepplan optimize` writes, as JSON reads it back."""
    made = optimize(workload, workload.statistics, Settings(time_limit=30, **settings))
    return json.loads(json.dumps(made.plan.to_json()))


@pytest.fixture(scope="module")
def fraud():
    workload = load_workload(FRAUD)
    return workload, _plan(workload)


def _rates(**rates: float) -> Statistics:
    return Statistics(rates=MappingProxyType(rates))


def test_a_rare_trigger_made_frequent_gives_another_plan_and_a_gain(fraud):
    """Password resets 150x as frequent (the fraud wave) and logins rare: account_takeover
    no longer starts from the resets; by the model the old plan sends more events than the
    new one, and the gain is their ratio."""
    workload, old = fraud
    assert old["patterns"]["account_takeover"]["detection"]["steps"][0] == ["r"]
    done = replan(workload, old, _rates(PasswordReset=3.0, Login=0.05))
    new_steps = [sorted(s) for s in done.plan.patterns["account_takeover"].detection.steps]
    assert new_steps[0] != ["r"]
    assert any(c.startswith("account_takeover: steps r -> w -> l became ")
               for c in done.changes)
    assert done.gain > 1 and done.old_cost > done.new_cost
    assert done.gain == pytest.approx(done.old_cost / done.new_cost)
    assert done.plan.invariants is not None  # the new plan carries its own


def test_the_same_statistics_give_the_same_plan_and_gain_one(fraud):
    """Unchanged statistics (none given, or the basis itself): no change, gain exactly 1."""
    workload, old = fraud
    for statistics in (Statistics(), workload.statistics):
        done = replan(workload, old, statistics)
        assert done.changes == []
        assert done.gain == 1.0 and done.old_cost == done.new_cost
        assert {n: p.detection.steps for n, p in done.plan.patterns.items()} == {
            n: tuple(frozenset(s) for s in p["detection"]["steps"])
            for n, p in old["patterns"].items()}


def test_a_plan_without_invariants_is_refused_and_kept(fraud):
    """A plan from an older cepplan (no `invariants`): refused, the message says why and
    that the old plan is kept."""
    workload, old = fraud
    older = {k: v for k, v in old.items() if k != "invariants"}
    with pytest.raises(ReplanRefused) as refused:
        replan(workload, older, _rates(PasswordReset=3.0))
    message = str(refused.value)
    assert "no invariants" in message and "the old plan is kept" in message


def test_a_plan_for_another_workload_is_refused(fraud):
    workload, old = fraud
    other = {**old, "workload": {"path": "x", "sha256": "0" * 64}}
    with pytest.raises(ReplanRefused, match="another workload: the old plan is kept"):
        replan(workload, other, Statistics())


HIERARCHY = {
    "format": "cepplan.workload/1", "name": "h", "time_unit": "s",
    "event_types": {t: {"attributes": {"v": "double"}} for t in ("A", "B", "D")},
    "patterns": [
        {"name": "pair", "structure": ["SEQ", "a:A", "b:B"], "within": "10s",
         "emit": {"v": "a.v"}},
        {"name": "top", "structure": ["AND", "x:pair", "d:D"], "within": "20s",
         "latency": {"max_steps": 1}}],
    "statistics": {"rates": {"A": 0.001, "B": 1.0, "D": 0.5}}}


def test_statistics_no_plan_meets_the_latency_bound_under_are_refused():
    """Planned propagating only each child's cheapest plan (-k 1, min-cost): with A rare,
    pair's cheapest plan a -> b has latency 1 and top meets its bound of 1 step; with A
    frequent and B rare it is b -> a, latency 2, and no plan of top meets the bound."""
    workload = build_workload(HIERARCHY)
    old = _plan(workload, k=1, strategy="min-cost")
    with pytest.raises(ReplanRefused) as refused:
        replan(workload, old, _rates(A=5.0, B=0.001))
    message = str(refused.value)
    assert "latency bound" in message and "the old plan is kept" in message


def test_a_basis_beyond_the_planners_limits_is_named_and_the_old_plan_kept():
    """A plan whose basis was rewritten (its digest too) with a rate the planner never
    accepts: refused, naming the entry, not a planner overflow."""
    from cepplan.planner.plan import CONTENT_DIGEST, content_digest

    workload = load_workload(FRAUD)
    old = _plan(workload)
    old["invariants"]["basis"]["rates"]["PasswordReset"] = 1e300
    old[CONTENT_DIGEST] = content_digest(old)
    with pytest.raises(ReplanRefused) as refused:
        replan(workload, old, Statistics())
    (problem,) = refused.value.problems
    assert problem.path == "invariants.basis.rates.PasswordReset"
    assert "at most" in problem.message
    assert refused.value.message.endswith("the old plan is kept")


def test_a_plan_that_does_not_fit_the_workload_is_refused_naming_each_problem(fraud):
    workload, old = fraud
    other = {**old, "patterns": {**old["patterns"], "ghost": old["patterns"]["card_testing"]}}
    with pytest.raises(ReplanRefused) as refused:
        replan(workload, other, Statistics())
    assert refused.value.message.startswith("the plan cannot be read (the workload has no "
                                            "pattern 'ghost')")
    assert [p.path for p in refused.value.problems] == ["patterns.ghost"]


def _planned(plan) -> dict:
    """A plan document without what depends on the clock (seconds spent, the search's
    trace of times)."""
    document = plan.to_json()
    document.pop("provenance")
    if "sharing" in document:
        document["sharing"] = {k: v for k, v in document["sharing"].items()
                               if k not in ("search", "trace")}
    return document


def test_the_same_seed_gives_the_same_plan(fraud):
    workload, old = fraud
    drifted = _rates(PasswordReset=3.0, Login=0.05)
    first, second = (replan(workload, old, drifted, seed=7) for _ in range(2))
    assert _planned(first.plan) == _planned(second.plan)
    assert (first.changes, first.gain) == (second.changes, second.gain)


def test_a_time_limit_already_spent_still_gives_a_plan_for_every_pattern(fraud):
    """Anytime: each pattern gets at least its one-step plan, and the modelled costs and
    gain are those of the plan made."""
    workload, old = fraud
    done = replan(workload, old, _rates(PasswordReset=3.0, Login=0.05), time_limit=1e-9)
    assert set(done.plan.patterns) == set(old["patterns"])
    assert all("time limit" in p.solver for p in done.plan.patterns.values())
    assert done.gain == pytest.approx(done.old_cost / done.new_cost)
