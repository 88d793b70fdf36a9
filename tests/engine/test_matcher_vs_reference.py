"""Property tests: on random small streams the runtime's matches equal the brute-force
reference matcher's, for every operator and feature, under every evaluation order."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import Plan, trivial_plan
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.workloads import TEMPLATES, TYPES, workload

EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 5), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0, 3.5, 5.0]), st.sampled_from(["x", "y"]))


def frame(rows: list[tuple]) -> pd.DataFrame:
    """A canonical event frame; ids are positions in arrival order (unsorted timestamps)."""
    return pd.DataFrame({"__type": [r[0] for r in rows],
                         "__ts": [float(r[1]) for r in rows],
                         "__id": list(range(len(rows))),
                         "v": [r[2] for r in rows], "w": [r[3] for r in rows],
                         "k": [r[4] for r in rows]})


def with_orders(plan: Plan, wl, data) -> Plan:
    """The plan with every pattern's evaluation order permuted by hypothesis."""
    from dataclasses import replace
    from types import MappingProxyType

    patterns = {}
    for name, chosen in plan.patterns.items():
        order = data.draw(st.permutations(list(wl.pattern(name).variables)))
        patterns[name] = replace(chosen, order=tuple(order))
    return replace(plan, patterns=MappingProxyType(patterns))


def same_matches(runtime: dict[str, list[dict]], reference: dict[str, list[dict]]) -> None:
    for name, expected in reference.items():
        got = sorted(map(canonical, runtime[name]))
        assert got == sorted(map(canonical, expected)), name
        assert len(set(got)) == len(got), f"{name}: a match was reported twice"


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("template", sorted(TEMPLATES))
@settings(max_examples=40)
@given(rows=st.lists(EVENT, max_size=12), chunk=st.integers(1, 6), data=st.data())
def test_runtime_equals_reference(template, ties, rows, chunk, data):
    wl = workload(TEMPLATES[template], seq_ties=ties)
    events = frame(rows)
    plan = with_orders(trivial_plan(wl), wl, data)
    result = run_local(events, job_from_json(job_data(wl, plan)), chunk_events=chunk)
    assert not any(result.cap_hits.values())
    same_matches(result.matches, reference_matches(wl, events))


TIED = st.tuples(st.sampled_from(TYPES), st.integers(0, 1), st.integers(0, 4),
                 st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


@pytest.mark.parametrize("template", sorted(TEMPLATES))
@settings(max_examples=25)
@given(rows=st.lists(TIED, max_size=10), chunk=st.integers(1, 4), data=st.data())
def test_many_ties_allowed(template, rows, chunk, data):
    """`seq_ties: allow` on streams where most events share a timestamp (two distinct
    timestamps): a SEQ holds whatever the row order within one timestamp."""
    wl = workload(TEMPLATES[template], seq_ties="allow")
    events = frame(rows)
    plan = with_orders(trivial_plan(wl), wl, data)
    result = run_local(events, job_from_json(job_data(wl, plan)), chunk_events=chunk)
    same_matches(result.matches, reference_matches(wl, events))


@pytest.mark.parametrize("template", ["seq_join_filter", "and_keyed", "not_middle", "hierarchy",
                                      "kleene_vshape", "not_kleene"])
@pytest.mark.parametrize("seed", [1, 2])
def test_denser_streams(template, seed):
    """Fixed denser streams (30 events), where three-way patterns match often."""
    rng = random.Random(seed)
    rows = [(rng.choice(TYPES), rng.randint(0, 12), rng.randint(0, 4),
             rng.choice([0.5, 2.0, 3.5, 5.0]), rng.choice("xy")) for _ in range(30)]
    wl = workload(TEMPLATES[template], kleene_cap=30)
    events = frame(rows)
    result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))), chunk_events=5)
    reference = reference_matches(wl, events)
    assert sum(len(v) for v in reference.values()) > 0
    same_matches(result.matches, reference)


def test_cap_is_reported_and_only_cuts():
    """Past the Kleene cap the runtime reports each cut enumeration and finds a subset."""
    patterns = TEMPLATES["kleene_alone"]
    rows = [("B", t, t, 0.5, "x") for t in range(6)]
    events = frame([(r[0], r[1] / 10, *r[2:]) for r in rows])
    capped = workload(patterns, kleene_cap=3)
    result = run_local(events, job_from_json(job_data(capped, trivial_plan(capped))))
    reference = reference_matches(capped, events)
    assert result.cap_hits["p"] > 0
    got = set(map(canonical, result.matches["p"]))
    assert got < set(map(canonical, reference["p"]))
    assert max(len(m["events"]["b"]) for m in result.matches["p"]) == 3
