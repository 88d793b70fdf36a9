"""Strict contiguity with a KLEENE variable (FlinkCEP `oneOrMore().consecutive()`, CORE `:+`,
MATCH_RECOGNIZE's `A B+ C`) on the in-process engine equals the brute-force reference written
from the definition, on random streams with equal timestamps and two partition keys."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from tests.engine.reference_matcher import canonical
from tests.engine.reference_strategies import strategy_matches
from tests.engine.test_matcher_vs_reference import frame, same_matches, with_orders
from tests.engine.test_strategies import shared_plan_equals_reference, with_strategy
from tests.engine.test_stream_matches import arrivals, stream
from tests.engine.workloads import TYPES, workload

KLEENE_SEQUENCES = {
    "middle": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
                "where": ["b.v >= a.v"], "partition_by": ["k"], "within": 6}],
    "first": [{"name": "p", "structure": ["SEQ", ["KLEENE", "b:B"], "c:C"],
               "where": ["c.v > FIRST(b.v)"], "within": 5}],
    "last_same_type": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:A"]],
                        "where": ["b.v > PREV(b.v)"], "partition_by": ["k"], "within": 5}],
    "bounded": [{"name": "p",
                 "structure": ["SEQ", "a:A", ["KLEENE", "b:B", {"min": 2, "max": 3}], "c:C"],
                 "partition_by": ["k"], "within": 6}],
}

EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 5), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("strategy", ["strict", {"b": "strict"}, {"c": "strict"},
                                      {"b": "strict", "c": "strict"}])
@pytest.mark.parametrize("name", sorted(KLEENE_SEQUENCES))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=12), chunk=st.integers(1, 5), data=st.data())
def test_strict_kleene_equals_reference(name, strategy, ties, rows, chunk, data):
    """Pattern-wide strict, or per variable (the ones the template has; a first variable
    cannot be named)."""
    structure = KLEENE_SEQUENCES[name][0]["structure"]
    if not isinstance(strategy, str):
        named = {leaf.split(":")[0] for leaf in structure[2:] if isinstance(leaf, str)}
        named |= {leaf[1].split(":")[0] for leaf in structure[2:] if isinstance(leaf, list)}
        strategy = {var: s for var, s in strategy.items() if var in named}
    wl = workload(with_strategy(KLEENE_SEQUENCES[name], strategy), seq_ties=ties)
    events = frame(rows)
    plan = with_orders(trivial_plan(wl), wl, data)
    result = run_local(events, job_from_json(job_data(wl, plan)), chunk_events=chunk)
    expected = strategy_matches(workload(KLEENE_SEQUENCES[name], seq_ties=ties),
                                {"p": strategy}, events)
    same_matches(result.matches, expected)


def test_strict_kleene_takes_runs_only():
    """A worked case: A, B, B, C, B, C at timestamps 0..5. Under `any` the B's 1, 2, 4 give
    seven matches; strict keeps only the run right after A that ends right before a C."""
    rows = [("A", 0, 0, 0.5, "x"), ("B", 1, 0, 0.5, "x"), ("B", 2, 0, 0.5, "x"),
            ("C", 3, 0, 0.5, "x"), ("B", 4, 0, 0.5, "x"), ("C", 5, 0, 0.5, "x")]
    wl = workload(with_strategy(KLEENE_SEQUENCES["middle"], "strict"))
    result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
    found = [([e["id"] for e in m["events"]["b"]], m["events"]["c"]["id"])
             for m in result.matches["p"]]
    assert found == [([1, 2], 3)]


SHARED = [  # the same Kleene prefix under both strategies: candidates for shared subtrees
    {"name": f"{prefix}_{strategy}", "structure": structure, "where": ["a.v < b.v"],
     "within": 5, "strategy": strategy}
    for prefix, structure in (("abc", ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"]),
                              ("abd", ["SEQ", "a:A", ["KLEENE", "b:B"], "d:A"]))
    for strategy in ("any", "strict")]


@pytest.mark.parametrize("seed", range(3))
def test_shared_plan_across_kleene_strategies_equals_reference(seed):
    """Kleene patterns that differ only in strategy, planned with sharing (tabu search): a
    join is shared, each pattern expands its Kleene variable itself, and every pattern's
    matches equal the reference of its strategy, with and without sharing."""
    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan

    assert sharing_plan(shared_plan_equals_reference(SHARED, seed)).uses


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=14))
def test_live_stream_strict_kleene_equals_reference(rows):
    """On a live stream (`StreamMatcher`, one micro-batch) strict Kleene patterns match as the
    reference says."""
    patterns = [{**template, "name": name} for name, (template,) in KLEENE_SEQUENCES.items()]
    wl = workload([{**p, "strategy": "strict"} for p in patterns], csv=True)
    arrived = arrivals(frame(rows), 0.0, 0)
    with tempfile.TemporaryDirectory() as folder:
        got, late, _ = stream(wl, job_data(wl, trivial_plan(wl)), arrived, 0.0, [],
                              Path(folder))
    expected = strategy_matches(workload(patterns), dict.fromkeys(KLEENE_SEQUENCES, "strict"),
                                arrived)
    assert not late
    assert got == {name: sorted(map(canonical, found))
                   for name, found in expected.items() if found}


def test_strict_kleene_enumerates_each_candidate_run_once(monkeypatch):
    """Joined rows sharing a Kleene variable's last event and candidates (here five A's before
    one run of B's, each joined with it) share one enumeration of its runs when its predicates
    read it alone; the matches stay the reference's (the property tests above)."""
    from cepplan.engine_adapter.runtime import kleene_stage

    calls = []
    enumerate_runs = kleene_stage.consecutive_subsets

    def counted(table, var, cands, last, *rest):
        calls.append((last, tuple(cands.tolist())))
        return enumerate_runs(table, var, cands, last, *rest)

    monkeypatch.setattr(kleene_stage, "consecutive_subsets", counted)
    rows = [("A", t, 0, 0.5, "x") for t in range(5)] + \
        [("B", 5, 1, 0.5, "x"), ("B", 6, 2, 0.5, "x"), ("C", 7, 0, 0.5, "x")]
    pattern = {"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
               "where": ["b.v > PREV(b.v)"], "within": 10, "strategy": "strict"}
    wl = workload([pattern])
    result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
    assert [([e["id"] for e in m["events"]["b"]], m["events"]["a"]["id"])
            for m in result.matches["p"]] == [([5, 6], 4)]
    assert len(calls) == len(set(calls))
