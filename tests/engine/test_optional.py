"""Optional variables (`["OPTIONAL", "b:B"]`): SQL's NULL for predicates reading an unbound
one, and a worked case with and without it (the property tests over every construct:
test_constructs.py)."""

from __future__ import annotations

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.workload.expr.parser import parse
from cepplan.workload.expr.printer import to_text
from cepplan.workload.optional import when_true
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import workload


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


def test_a_predicate_left_constant_is_decided_by_the_loader():
    """With b unbound, `b.v > c.v or 1 < 2` is TRUE whatever c: no predicate is left (the
    engines never see a predicate over no variable); `b.v > c.v or 2 < 1` is never TRUE: no
    core pattern without b."""
    def core(where: str) -> list[tuple[str, list[str]]]:
        wl = workload([{"name": "p", "structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"], "c:C"],
                        "where": [where], "within": 4}])
        return [(p.name, [q.text for q in p.predicates]) for p in wl.patterns]

    assert core("b.v > c.v or 1 < 2") == [("p", ["b.v > c.v or 1 < 2"]), ("p__no_b", [])]
    assert core("b.v > c.v or 2 < 1") == [("p", ["b.v > c.v or 2 < 1"])]
