"""Selection strategies (next, strict) on the in-process engine equal the brute-force
reference written from their definitions, on random streams full of equal timestamps, under
every evaluation order."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from tests.engine.reference_strategies import strategy_matches
from tests.engine.test_matcher_vs_reference import frame, same_matches, with_orders
from tests.engine.workloads import TYPES, workload

SEQUENCES = {
    "join": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "where": ["b.v > a.v"],
              "within": 4}],
    "same_type": [{"name": "p", "structure": ["SEQ", "a:A", "b:A", "c:A"],
                   "where": ["a.v <= b.v", "c.v > 1"], "within": 4}],
    "user_not": [{"name": "p", "structure": ["SEQ", "a:A", ["NOT", "x:B"], "c:C"],
                  "where": ["x.v >= 2", "c.w > a.w"], "within": 4}],
    "keyed": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
               "where": ["a.v < b.v", "b.w > 1"], "partition_by": ["k"], "within": 5}],
    "later_join": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                    "where": ["b.v < c.v", "b.v > 0"], "within": 5}],
}

EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 4), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


def with_strategy(patterns: list[dict], strategy: str) -> list[dict]:
    out = copy.deepcopy(patterns)
    for pattern in out:
        pattern["strategy"] = strategy
    return out


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("strategy", ["next", "strict", {"b": "strict", "c": "next"},
                                      {"c": "strict"}])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=11), chunk=st.integers(1, 5), data=st.data())
def test_strategy_equals_reference(name, strategy, ties, rows, chunk, data):
    """One strategy for every pair, or per variable (those of the template; others any)."""
    if not isinstance(strategy, str):
        variables = {leaf.split(":")[0] for leaf in SEQUENCES[name][0]["structure"][2:]
                     if isinstance(leaf, str)}
        strategy = {var: s for var, s in strategy.items() if var in variables}
    wl = workload(with_strategy(SEQUENCES[name], strategy), seq_ties=ties)
    events = frame(rows)
    plan = with_orders(trivial_plan(wl), wl, data)
    result = run_local(events, job_from_json(job_data(wl, plan)), chunk_events=chunk)
    expected = strategy_matches(workload(SEQUENCES[name], seq_ties=ties), {"p": strategy},
                                events)
    same_matches(result.matches, expected)


def test_next_picks_the_first_qualifying_event():
    """A worked case: after A(v=1) the B events have v 0, 3, 4 (the last two tied): under
    `next` the B with v=0 does not qualify (b.v > a.v), so both tied B at the next timestamp
    match; under `strict` the B right after A fails its condition, so nothing matches."""
    rows = [("A", 0, 1, 0.5, "x"), ("B", 1, 0, 0.5, "x"), ("B", 2, 3, 0.5, "x"),
            ("B", 2, 4, 0.5, "x"), ("C", 3, 0, 0.5, "x"), ("B", 4, 5, 0.5, "x")]
    events = frame(rows)
    found = {}
    for strategy in ("any", "next", "strict"):
        wl = workload(with_strategy(SEQUENCES["join"], strategy))
        result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
        found[strategy] = sorted(m["events"]["b"]["id"] for m in result.matches["p"])
    assert found == {"any": [2, 3, 5], "next": [2, 3], "strict": []}


SHARED = [  # the same SEQ prefix under every strategy: candidates for shared subtrees
    {"name": f"{prefix}_{strategy}", "structure": structure, "where": ["a.v < b.v"],
     "within": 4, "strategy": strategy}
    for prefix, structure in (("abc", ["SEQ", "a:A", "b:B", "c:C"]), ("ab", ["SEQ", "a:A", "b:B"]))
    for strategy in ("any", "next", "strict")]


@pytest.mark.parametrize("seed", range(4))
def test_shared_plan_across_strategies_equals_reference(seed):
    """Patterns that differ only in strategy, planned with sharing (tabu search): identical
    matches with and without sharing, equal to the reference of each one's strategy."""
    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan

    job = shared_plan_equals_reference(SHARED, seed)
    assert sharing_plan(job).uses, "no subtree was shared"


def shared_plan_equals_reference(patterns: list[dict], seed: int):
    """Plan `patterns` (each with its `strategy`) with sharing, run them with and without it
    on a random stream and check both against the reference; the job run."""
    import random

    from cepplan.planner.evaluation import EvaluationSettings, evaluation
    from tests.engine.reference_matcher import canonical

    rng = random.Random(seed)
    rows = [(rng.choice(TYPES), rng.randint(0, 12), rng.randint(0, 4), 0.5, "x")
            for _ in range(30)]
    wl = workload(patterns, seq_ties="allow")
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", 0.5, seed=1))
    job = job_from_json(job_data(wl, plan))
    events = frame(rows)
    plain = workload([{k: v for k, v in p.items() if k != "strategy"} for p in patterns],
                     seq_ties="allow")
    expected = strategy_matches(plain, {p["name"]: p["strategy"] for p in patterns}, events)
    for share in (True, False):
        result = run_local(events, job, share=share)
        assert {p: sorted(map(canonical, m)) for p, m in result.matches.items()} == \
            {p: sorted(map(canonical, m)) for p, m in expected.items()}, share
    return job
