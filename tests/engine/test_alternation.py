"""Alternation (`"x:B|C"`) worked cases: `next` over several types, the name matches are
written under, and the planner sharing the alternatives' common part (the property tests
over every construct: test_constructs.py)."""

from __future__ import annotations

import json

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from tests.engine.constructs import ALTERNATIONS, by_reported_name, user_workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import TYPES, workload


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
