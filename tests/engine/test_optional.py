"""Optional variables (`["OPTIONAL", "b:B"]`) on the in-process engine equal the brute-force
reference written from the definition (a match binds the variable or leaves it unbound; its
conditions are not evaluated when unbound, other predicates reading it see NULL under SQL's
three-valued logic), on random streams full of equal timestamps, under every evaluation order,
alone, with alternatives, negation and a strategy."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.workload.expr.parser import parse
from cepplan.workload.expr.printer import to_text
from cepplan.workload.optional import when_true
from tests.engine.reference_matcher import canonical
from tests.engine.reference_strategies import strategy_matches
from tests.engine.test_alternation import EVENT, drawn_run, equals_reference, user_workload
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import workload

OPTIONALS = {
    "middle": [{"name": "p", "structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"], "c:C"],
                "where": ["b.v > a.v", "c.v >= b.v or c.w > 1.0", "c.v > a.v"],
                "within": 4}],
    "first": [{"name": "p", "structure": ["SEQ", ["OPTIONAL", "b:B"], "a:A", "c:A"],
               "where": ["a.v < c.v", "not (b.v > c.v)"], "within": 3}],
    "and_with_alternatives": [{"name": "p", "structure": ["AND", "a:A", ["OPTIONAL", "b:B"],
                                                          ["OPTIONAL", "x:C|B"]],
                               "where": ["b.v < x.v", "a.v >= 1"], "within": 3}],
    "before_not": [{"name": "p", "structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"],
                                               ["NOT", "n:C"], "c:A"],
                    "where": ["n.v > b.v"], "within": 4}],
}


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("name", sorted(OPTIONALS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=10), chunk=st.integers(1, 5), data=st.data())
def test_optional_equals_reference(name, ties, rows, chunk, data):
    equals_reference(OPTIONALS[name], ties, frame(rows), chunk, data)


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("strategy", ["strict", "next"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=10), chunk=st.integers(1, 5), data=st.data())
def test_optional_under_strategy_equals_reference(strategy, ties, rows, chunk, data):
    """A strategy holds between consecutive variables of the match: an unbound optional
    variable is not one (SQL's `A B? C` under strict contiguity)."""
    patterns = [{**OPTIONALS["middle"][0], "strategy": strategy}]
    events = frame(rows)
    got = drawn_run(workload(patterns, seq_ties=ties), events, chunk, data)
    expected = strategy_matches(user_workload(OPTIONALS["middle"], ties), {"p": strategy},
                                events)
    assert got.get("p", []) == sorted(map(canonical, expected["p"]))


def test_absent_variable_reads_null():
    """SQL's three-valued logic: with b unbound `c.v >= b.v or c.w > 1.0` holds when
    `c.w > 1.0` does; `not (b.v > c.v)` never holds; `b.v > 1 and c.v > 2` never."""
    absent = frozenset({"b"})
    assert to_text(when_true(parse("c.v >= b.v or c.w > 1.0"), absent)) == "c.w > 1.0"
    assert when_true(parse("not (b.v > c.v)"), absent) is False
    assert when_true(parse("b.v > 1 and c.v > 2"), absent) is False
    assert to_text(when_true(parse("not (b.v > 1 and c.v > 2)"), absent)) == "not c.v > 2"


def test_worked_case_with_and_without_the_optional_event():
    """A(0) B(1) C(2): `SEQ(a, b?, c)` finds (a, b, c) and (a, c) under any; under strict
    only (a, b, c): the B sits between a and c."""
    rows = [("A", 0, 0, 0.5, "x"), ("B", 1, 1, 0.5, "x"), ("C", 2, 2, 0.5, "x")]
    found = {}
    for strategy in ("any", "strict"):
        wl = workload([{"name": "p", "structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"], "c:C"],
                        "within": 4, "strategy": strategy}])
        result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
        found[strategy] = sorted(tuple(sorted(m["events"])) for ms in result.matches.values()
                                 for m in ms)
    assert found == {"any": [("a", "b", "c"), ("a", "c")], "strict": [("a", "b", "c")]}
