"""The context rules of docs/contexts.md on hand-made streams whose windows are worked out by
hand: initial context, half-open windows, the instant of a transition, several contexts at
once, the default context ending and returning, same-instant order."""

from __future__ import annotations

import math

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.contexts import run_with_contexts
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.errors import InputError
from cepplan.planner.plan import trivial_plan
from tests.contexts.context_workloads import CONTEXTS, context_workload, frame

INF = math.inf


def _run(rows, workload=None):
    workload = workload or context_workload()
    result = run_with_contexts(frame(rows), job_from_json(job_data(workload,
                                                                   trivial_plan(workload))))
    windows = {(c, s, e) for _, c, s, e in result.windows.frame().itertuples(index=False)}
    ids = {name: sorted(tuple(sorted(e["id"] for e in m["events"].values())) for m in found)
           for name, found in result.matches.items()}
    return windows, ids


def test_initial_context_holds_until_a_transition():
    windows, ids = _run([("A", 1, 3, "x"), ("C", 2, 3, "x")])
    assert windows == {("idle", -INF, INF)}  # no deriving match: idle holds throughout
    assert ids["idle_only"] == [(0, 1)]
    assert ids["pair"] == []


def test_switch_at_an_instant_closes_old_window_inclusive_and_opens_new_exclusive():
    rows = [("A", 1, 0, "x"), ("A", 2, 1, "x"),   # rise ends at 2: idle -> busy at 2
            ("C", 3, 3, "x"), ("A", 3, 0, "x"), ("C", 4, 3, "x")]
    windows, ids = _run(rows)
    assert windows == {("idle", -INF, 2.0), ("busy", 2.0, INF)}
    assert ids["rise"] == [(0, 1)]
    assert ids["idle_only"] == []          # A@1/A@2 with C@3 span the switch
    # pair: A@2 belongs to idle (window (2, inf) excludes 2); A@3 with C@4 is inside busy
    assert ids["pair"] == [(3, 4)]


def test_initiate_ends_the_default_and_terminate_brings_it_back():
    rows = [("B", 1, 5, "x"),                      # alert: alarm opens, idle (default) ends
            ("A", 2, 0, "x"), ("C", 3, 3, "x"),    # idle_only would match: idle is closed
            ("B", 4, 0, "x"),                      # calm: alarm ends, idle returns at 4
            ("A", 5, 0, "x"), ("C", 6, 3, "x")]
    windows, ids = _run(rows)
    assert windows == {("idle", -INF, 1.0), ("alarm", 1.0, 4.0), ("idle", 4.0, INF)}
    assert ids["idle_only"] == [(4, 5)]
    assert ids["calm"] == [(3,)]


def test_several_contexts_hold_at_once():
    rows = [("A", 1, 0, "x"), ("A", 2, 1, "x"),   # busy from 2
            ("B", 3, 4, "x"),                      # alert in busy: alarm from 3, busy stays
            ("A", 4, 0, "x"), ("B", 5, 4, "x")]
    windows, ids = _run(rows)
    assert windows == {("idle", -INF, 2.0), ("busy", 2.0, INF), ("alarm", 3.0, INF)}
    # both (busy or alarm): A@4 + B@5 and A@2? no (A@2 is in idle); A@4+B@3 inside busy
    assert ids["both"] == [(2, 3), (3, 4)]


def test_transitions_at_one_instant_apply_in_listed_order():
    listed = [{"on": "alert", "action": "switch", "from": "idle", "to": "busy"},
              {"on": "alert", "action": "initiate", "context": "alarm"},
              {"on": "fall", "action": "switch", "from": "busy", "to": "idle"},
              {"on": "calm", "action": "terminate", "context": "alarm"}]
    windows, _ = _run([("B", 1, 5, "x")], context_workload(dict(CONTEXTS, transitions=listed)))
    # the switch runs first: busy opens from idle, then alarm opens beside it
    assert windows == {("idle", -INF, 1.0), ("busy", 1.0, INF), ("alarm", 1.0, INF)}
    swapped = [listed[1], listed[0], *listed[2:]]
    # initiating alarm first ends idle, so the switch from idle never applies and busy could
    # never hold: the loader refuses that model
    with pytest.raises(InputError, match=r"transitions\[2\]\.from: switch from 'busy', which "
                       "can never hold"):
        context_workload(dict(CONTEXTS, transitions=swapped))


def test_partitions_hold_their_own_contexts():
    windows, ids = _run([("A", 1, 0, "x"), ("A", 2, 1, "x"), ("A", 3, 0, "y"),
                         ("C", 4, 3, "y")])
    # only partition x switched; y stays idle
    assert windows == {("idle", -INF, 2.0), ("busy", 2.0, INF), ("idle", -INF, INF)}
    assert ids["idle_only"] == [(2, 3)]
