"""Alternation (`"x:B|C"`: x binds one event of any of its types) on the in-process engine
equals the brute-force reference, which reads the variable's types from the definition (a
candidate is an event of any of them), on random streams full of equal timestamps, under every
evaluation order and with or without a selection strategy."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.workload.model import Workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.reference_strategies import strategy_matches
from tests.engine.test_matcher_vs_reference import frame, with_orders
from tests.engine.workloads import TYPES, workload

ALTERNATIONS = {
    "seq_middle": [{"name": "p", "structure": ["SEQ", "a:A", "x:B|C", "c:A"],
                    "where": ["x.v > a.v", "c.w >= x.w"], "within": 4}],
    "and_keyed": [{"name": "p", "structure": ["AND", "a:A", "x:C|B"],
                   "where": ["a.v + x.v > 3"], "partition_by": ["k"], "within": 3}],
    "two_overlapping": [{"name": "p", "structure": ["SEQ", "x:A|B", "y:B|C"],
                         "where": ["x.v <= y.v"], "within": 3}],
    "with_not": [{"name": "p", "structure": ["SEQ", "x:A|B", ["NOT", "n:C"], "c:A"],
                  "where": ["n.v > x.v"], "within": 4}],
    "with_kleene": [{"name": "p", "structure": ["SEQ", "x:A|C", ["KLEENE", "b:B"]],
                     "where": ["x.v <= b.v"], "within": 3}],
}

EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 4), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


def user_workload(patterns: list[dict], ties: str) -> Workload:
    """The workload as the definition reads it, not expanded: each alternation variable
    loaded with its first type, then given all its types as its alternatives; each OPTIONAL
    operand loaded plain, then marked optional."""
    single = copy.deepcopy(patterns)
    marks: dict[tuple[str, str], dict] = {}
    for pattern in single:
        for i, leaf in enumerate(pattern["structure"]):
            optional = isinstance(leaf, list) and leaf[0] == "OPTIONAL"
            leaf = leaf[1] if optional else leaf
            if isinstance(leaf, str) and i:
                var, types = leaf.split(":")
                alternatives = tuple(types.split("|")) if "|" in types else ()
                marks[pattern["name"], var] = {"alternatives": alternatives,
                                               "optional": optional}
                pattern["structure"][i] = f"{var}:{types.split('|')[0]}"
    wl = workload(single, seq_ties=ties)
    return replace(wl, patterns=tuple(
        replace(p, operands=tuple(replace(o, **marks.get((p.name, o.var), {}))
                                  for o in p.operands)) for p in wl.patterns))


def by_reported_name(matches: dict[str, list[dict]]) -> dict[str, list[tuple]]:
    """Every match, canonical, under the pattern name it was written with."""
    out: dict[str, list[tuple]] = {}
    for found in matches.values():
        for match in found:
            out.setdefault(match["pattern"], []).append(canonical(match))
    return {name: sorted(found) for name, found in out.items()}


def drawn_run(wl: Workload, events, chunk: int, data) -> dict[str, list[tuple]]:
    """The in-process engine's matches by reported name, under orders hypothesis draws."""
    plan = with_orders(trivial_plan(wl), wl, data)
    return by_reported_name(run_local(events, job_from_json(job_data(wl, plan)),
                                      chunk_events=chunk).matches)


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("name", sorted(ALTERNATIONS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=11), chunk=st.integers(1, 5), data=st.data())
def test_alternation_equals_reference(name, ties, rows, chunk, data):
    """Each match once, under the user's pattern name, whichever alternative it took."""
    equals_reference(ALTERNATIONS[name], ties, frame(rows), chunk, data)


def equals_reference(patterns: list[dict], ties: str, events, chunk: int, data) -> None:
    """Pattern p's matches on the in-process engine are the reference's, each once."""
    got = drawn_run(workload(patterns, seq_ties=ties), events, chunk, data).get("p", [])
    assert got == sorted(map(canonical, reference_matches(user_workload(patterns, ties),
                                                          events)["p"]))
    assert len(set(got)) == len(got), "a match was reported twice"


STRATEGY = [{"name": "p", "structure": ["SEQ", "a:A", "x:B|C", "c:A"],
             "where": ["x.v > a.v", "c.v >= x.v"], "within": 4}]


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("strategy", ["next", "strict", {"x": "next"}, {"c": "next"}])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=11), chunk=st.integers(1, 5), data=st.data())
def test_alternation_under_strategy_equals_reference(strategy, ties, rows, chunk, data):
    """Under `next`, an event of any of x's types satisfying x's conditions comes first."""
    events = frame(rows)
    got = drawn_run(workload([{**STRATEGY[0], "strategy": strategy}], seq_ties=ties), events,
                    chunk, data)
    expected = strategy_matches(user_workload(STRATEGY, ties), {"p": strategy}, events)
    assert got.get("p", []) == sorted(map(canonical, expected["p"]))


def test_next_over_alternatives_takes_the_first_of_either_type():
    """A worked case: after A(v=0), a C(v=1) then a B(v=2): under `next` x binds the C only
    (the first event of either type), under `any` both."""
    rows = [("A", 0, 0, 0.5, "x"), ("C", 1, 1, 0.5, "x"), ("B", 2, 2, 0.5, "x")]
    found = {}
    for strategy in ("any", "next"):
        wl = workload([{"name": "p", "structure": ["SEQ", "a:A", "x:B|C"], "within": 4,
                        "strategy": strategy}])
        result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
        found[strategy] = sorted(m["events"]["x"]["type"] for ms in result.matches.values()
                                 for m in ms)
    assert found == {"any": ["B", "C"], "next": ["C"]}


def test_matches_are_written_under_the_users_pattern_name():
    """The JSON lines of every alternative name the pattern as the user wrote it."""
    wl = workload(ALTERNATIONS["seq_middle"])
    rows = [("A", 0, 0, 0.5, "x"), ("B", 1, 1, 0.5, "x"), ("C", 1, 2, 0.5, "x"),
            ("A", 2, 0, 3.5, "x")]
    job = job_from_json(job_data(wl, trivial_plan(wl)))
    assert sorted(p.name for p in job.patterns) == ["p__x_B", "p__x_C"]
    result = run_local(frame(rows), job)
    lines = [json.loads(json.dumps(m)) for ms in result.matches.values() for m in ms]
    assert sorted((m["pattern"], m["events"]["x"]["type"]) for m in lines) == \
        [("p", "B"), ("p", "C")]


def test_alternatives_share_their_common_part():
    """The planner sees the core patterns as patterns with a common prefix (a:A then c:A
    joined the same way): a shared plan shares it and gives the reference's matches."""
    import random

    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
    from cepplan.planner.evaluation import EvaluationSettings, evaluation

    patterns = [{"name": "p", "structure": ["AND", "a:A", "c:A", "x:B|C"],
                 "where": ["a.v < c.v"], "within": 4}]
    wl = workload(patterns, seq_ties="allow")
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", 0.5, seed=1))
    job = job_from_json(job_data(wl, plan))
    rng = random.Random(3)
    events = frame([(rng.choice(TYPES), rng.randint(0, 12), rng.randint(0, 4), 0.5, "x")
                    for _ in range(30)])
    expected = sorted(map(canonical, reference_matches(user_workload(patterns, "allow"),
                                                       events)["p"]))
    for share in (True, False):
        assert by_reported_name(run_local(events, job, share=share).matches)["p"] == expected
    assert sharing_plan(job).uses, "no subtree was shared"
