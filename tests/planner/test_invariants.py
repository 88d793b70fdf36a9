"""A plan's invariants (docs/planner.md, "When a plan stops holding"): `violations` of
measured statistics against hand-written ranges, and the section every plan carries."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from cepplan.planner.compose import Settings
from cepplan.planner.invariants import Violation, violations
from cepplan.planner.optimize import optimize
from cepplan.workload.loader import load_workload
from cepplan.workload.model import Statistics
from tests.conftest import EXAMPLES

INVARIANTS = {
    "basis": {"rates": {"PasswordReset": 0.5, "Login": 3.0},
              "selectivities": {"fraud": {"w.amount > 500": 0.6}}},
    "rates": {"PasswordReset": {"low": 0.2, "high": 1.5},
              "Login": {"low": None, "high": 10.0}},
    "selectivities": {"fraud": {"w.amount > 500": {"low": 0.3, "high": None}}},
    "search_margin": None,
    "time_unit": "min",
}


def _statistics(rates=None, selectivities=None) -> Statistics:
    return Statistics(rates=MappingProxyType(rates or {}),
                      selectivities=MappingProxyType(selectivities or {}))


def test_a_rate_above_its_range_is_described_in_the_users_words():
    found = violations(INVARIANTS, _statistics({"PasswordReset": 4.1, "Login": 3.0}))
    assert found == [Violation("rate of PasswordReset", 4.1, 0.2, 1.5, "PasswordReset",
                               "events per minute")]
    assert found[0].describe() == ("PasswordReset: 4.1 events per minute, the plan holds "
                                   "for 0.2–1.5")


def test_one_sided_ranges_and_selectivities():
    found = violations(INVARIANTS, _statistics(
        {"Login": 12.0}, {"fraud": {"w.amount > 500": 0.1}}))
    assert [v.statistic for v in found] == ["rate of Login",
                                            "selectivity of `w.amount > 500` in fraud"]
    assert found[0].describe() == "Login: 12 events per minute, the plan holds for up to 10"
    assert found[1].describe() == ("fraud: w.amount > 500: 0.1 of the events pass, the plan "
                                   "holds for 0.3 or more")


def test_statistics_not_measured_or_not_tracked_are_no_violation():
    assert violations(INVARIANTS, _statistics({"Swipe": 1e9})) == []
    assert violations(INVARIANTS, _statistics(
        {}, {"other": {"w.amount > 500": 0.0}})) == []


@given(st.floats(0.2, 1.5), st.floats(0.0, 10.0), st.floats(0.3, 1.0))
def test_inside_every_range_is_no_violation(reset, login, kept):
    """Bounds are inclusive: any value within them, the bounds themselves included."""
    assert violations(INVARIANTS, _statistics(
        {"PasswordReset": reset, "Login": login},
        {"fraud": {"w.amount > 500": kept}})) == []


def test_every_plan_records_a_range_holding_its_basis_for_every_statistic():
    """The fraud example: each type's rate and each predicate's selectivity has a range,
    the value planned from inside it; the basis is the statistics planned with."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    plan = optimize(workload, workload.statistics, Settings(time_limit=30)).plan
    section = plan.invariants
    assert section["basis"]["rates"] == dict(workload.statistics.rates)
    assert set(section["rates"]) == {"PasswordReset", "Login", "Withdrawal", "Swipe"}
    for type_name, bounds in section["rates"].items():
        basis = section["basis"]["rates"][type_name]
        assert (bounds["low"] or 0) <= basis <= (bounds["high"] or float("inf"))
    for pattern in workload.patterns:
        assert set(section["selectivities"][pattern.name]) == {p.text for p in
                                                              pattern.predicates}
    assert violations(section, workload.statistics) == []


def test_a_plan_only_compared_can_be_made_without_them():
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    plan = optimize(workload, workload.statistics, Settings(time_limit=30),
                    invariants=False).plan
    assert plan.invariants is None and "invariants" not in plan.to_json()


def test_the_search_margin_is_the_next_cheapest_plan_priced_over_the_chosen():
    """Its earlier best plans (the trace) and baselines; none costlier: no margin."""
    from cepplan.planner.invariant_ranges import search_margin

    sharing = {"modelled_cost": {"chosen": 10.0, "trivial": 20.0, "sh": 10.0, "re": 15.0},
               "trace": [[0.0, 20.0], [0.1, 12.5], [0.2, 10.0]]}
    assert search_margin(sharing) == 0.25
    assert search_margin({"modelled_cost": {"chosen": 10.0, "trivial": 10.0}}) is None
    assert search_margin(None) is None and search_margin({"note": "no search"}) is None


def test_statistics_not_analysed_in_time_hold_at_their_basis_only():
    """The time limit reached before the pass: every statistic's range is its basis alone
    (any drift is a violation), and the plan's time-limit notes say how many."""
    from cepplan.planner.invariant_ranges import invariants_pass
    from cepplan.planner.optimize import PlanRequest

    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    plan = optimize(workload, workload.statistics, Settings(time_limit=30),
                    invariants=False).plan
    late = invariants_pass(PlanRequest(workload, workload.statistics, Settings(),
                                       deadline=0.0), plan)
    section = late.invariants
    for type_name, bounds in section["rates"].items():
        basis = workload.statistics.rates[type_name]
        assert bounds == {"low": basis, "high": basis}
    assert late.provenance["time_limit_notes"] == [
        "invariants: 12 of 12 statistics not analysed in time: re-planning treats any change "
        "of them as a change of the plan's choice"]
    drifted = Statistics(rates=MappingProxyType({"Login": 1.5 * 1.01}))
    assert [v.statistic for v in violations(section, drifted)] == ["rate of Login"]


def test_rates_planned_by_a_poisson_model_have_ranges_and_markov_ones_none():
    """`cepplan stats` records a model for every type, Poisson included: those rates are what
    the planner reads and have ranges (they had none while any model excluded a type); a
    type planned by its Markov chain has no rate range."""
    import json

    from cepplan.workload.loader import build_workload

    raw = json.loads((EXAMPLES / "fraud" / "workload.json").read_text())
    raw["statistics"]["models"] = {
        "PasswordReset": {"kind": "poisson"}, "Login": {"kind": "poisson"},
        "Withdrawal": {"kind": "poisson"},
        "Swipe": {"kind": "markov", "order": 1, "time_step": "1min",
                  "transition": [[0.2, 0.8], [0.5, 0.5]]}}
    workload = build_workload(raw)
    section = optimize(workload, workload.statistics, Settings(time_limit=30)).plan.invariants
    assert set(section["rates"]) == {"PasswordReset", "Login", "Withdrawal"}
    assert section["rates"]["PasswordReset"]["high"] is not None  # the rare trigger bounds
