"""The contexts pass: Listing 1 grouping against brute force on random interval sets, Bell
numbers, Definition 2 relationships on hand-made models, and the plan.json section."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.costmodels.contexts import bell, grouped_search_space, pushed_down_cost
from cepplan.planner.compose import Settings
from cepplan.planner.contexts import group_windows, relationships
from cepplan.planner.optimize import optimize
from cepplan.planner.plan import read_plan, write_plan
from tests.contexts.context_workloads import CONTEXTS, PATTERNS, context_workload

QUERIES = ["q1", "q2", "q3", "q4", "q5"]
WINDOW = st.tuples(st.integers(0, 20), st.integers(1, 10),
                   st.frozensets(st.sampled_from(QUERIES), min_size=1, max_size=3))


@settings(max_examples=200)
@given(st.lists(WINDOW, min_size=1, max_size=8))
def test_grouping_gives_the_brute_force_workload_at_every_instant(raw):
    windows = [(float(s), float(s + n), q) for s, n, q in raw]
    grouped = group_windows(windows)
    for (s1, e1, _), (s2, _, _) in itertools.pairwise(grouped):
        assert s1 < e1 <= s2  # non-overlapping, in order
    for tenth in range(0, 310):
        instant = tenth / 10 + 0.05  # between bounds: each instant lies in one open stretch
        expected = frozenset().union(*(q for s, e, q in windows if s < instant <= e))
        found = [q for s, e, q in grouped if s < instant <= e]
        assert (found[0] if found else frozenset()) == expected
        assert len(found) <= 1


def test_bell_numbers_and_search_space():
    assert [bell(n) for n in range(8)] == [1, 1, 2, 5, 15, 52, 203, 877]
    assert bell(24) == 445958869294805289
    assert grouped_search_space([3, 3]) == 10
    assert pushed_down_cost(10.0, 0.25, 0.5) == 3.0


def test_relationships_inferred_from_transitions():
    contexts = {"initial": "idle", "types": {"idle": {"patterns": ["rise"]},
                                             "busy": {"patterns": ["fall", "alert"]},
                                             "alarm": {"patterns": ["calm"]}},
                "partition_by": ["k"],
                "transitions": [
                    {"on": "rise", "action": "switch", "from": "idle", "to": "busy"},
                    {"on": "fall", "action": "switch", "from": "busy", "to": "idle"},
                    {"on": "alert", "action": "initiate", "context": "alarm"},
                    {"on": "calm", "action": "terminate", "context": "alarm"}]}
    found = relationships(context_workload(contexts))
    # alarm opens only from busy (alert runs only there); fall can end busy while alarm holds
    assert found == [{"context": "alarm", "in": "busy", "relation": "overlaps"}]
    contexts["transitions"].insert(1, {"on": "fall", "action": "terminate",
                                       "context": "alarm"})
    found = relationships(context_workload(contexts))
    # fall now ends alarm at the instant it ends busy: alarm is contained in busy
    assert found == [{"context": "alarm", "in": "busy", "relation": "contained"}]


def test_plan_json_contexts_section_round_trips(tmp_path):
    workload = context_workload()
    result = optimize(workload, workload.statistics if workload.statistics.rates else
                      _rates(workload), Settings())
    section = result.plan.contexts
    assert section["deriving"] == ["rise", "fall", "alert", "calm"]
    groups = {tuple(g["contexts"]): g["patterns"] for g in section["groups"]}
    assert groups[("idle",)] == ["rise", "alert", "idle_only"]
    assert set(groups[("alarm", "busy")]) == {"fall", "alert", "pair", "both", "on_top", "calm"}
    assert section["search_space"]["whole"] == bell(len(PATTERNS))
    path = tmp_path / "plan.json"
    write_plan(result.plan, path)
    assert read_plan(path, workload).contexts == result.plan.to_json()["contexts"]
    assert CONTEXTS["initial"] == section["initial"]


def _rates(workload):
    from cepplan.workload.model import Statistics
    return Statistics(rates={t: 1.0 for t in workload.event_types})
