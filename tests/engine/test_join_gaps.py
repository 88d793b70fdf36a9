"""Negations checked inside the join (`runtime/gaps.py`) and contiguity by stamps
(`runtime/contiguity.py`): the matches equal the brute-force references on random streams
full of equal timestamps, under every evaluation order (so the gap is closed by y, searching
forward from x, or by x, searching back from y), both tie modes, and, for stamps, read in
time order in many small batches by the in-process engine."""

from __future__ import annotations

import math
import tempfile
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import byte_ranges, engine, range_cut
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.runtime.contiguity import StampOnly, Timeline
from cepplan.engine_adapter.runtime.gaps import join_gaps
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.reference_strategies import strategy_matches
from tests.engine.small_reads import run_read_in_small_batches
from tests.engine.test_local_engine import read_matches
from tests.engine.test_matcher_vs_reference import frame, same_matches, with_orders
from tests.engine.workloads import TYPES, workload

STRATEGIES = {  # next whose condition reads a variable before x (msft-like); strict keyed
    "far": ({"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
             "where": ["a.v < c.v", "b.w > 1"], "within": 5}, "next"),
    "far_mixed": ({"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
                   "where": ["a.v < c.v", "b.w > 1"], "within": 5},
                  {"b": "strict", "c": "next"}),
    "strict_keyed": ({"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
                      "where": ["a.v <= c.v"], "partition_by": ["k"], "within": 5}, "strict"),
    "same_type": ({"name": "p", "structure": ["SEQ", "a:A", "b:A", "c:A"],
                   "where": ["a.v <= c.v"], "within": 4}, "next"),
}
NEGATIONS = {  # a user's NOT between two variables, its predicates reading both sides
    "reads_before": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", ["NOT", "x:A"], "c:C"],
                      "where": ["x.v > a.v", "x.w < 3"], "within": 5}],
    "reads_after": [{"name": "p", "structure": ["SEQ", "a:A", ["NOT", "x:B"], "c:C"],
                     "where": ["x.v < c.v"], "within": 4}],
}

EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 5), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("name", sorted(STRATEGIES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=14), chunk=st.integers(1, 5), data=st.data())
def test_strategies_in_the_join_equal_reference(name, ties, rows, chunk, data):
    template, strategy = STRATEGIES[name]
    wl = workload([{**template, "strategy": strategy}], seq_ties=ties)
    events = frame(rows)
    plan = with_orders(trivial_plan(wl), wl, data)
    result = run_local(events, job_from_json(job_data(wl, plan)), chunk_events=chunk)
    same_matches(result.matches, strategy_matches(workload([template], seq_ties=ties),
                                                  {"p": strategy}, events))


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("name", sorted(NEGATIONS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=14), chunk=st.integers(1, 5), data=st.data())
def test_negations_in_the_join_equal_reference(name, ties, rows, chunk, data):
    wl = workload(NEGATIONS[name], seq_ties=ties)
    events = frame(rows)
    plan = with_orders(trivial_plan(wl), wl, data)
    result = run_local(events, job_from_json(job_data(wl, plan)), chunk_events=chunk)
    same_matches(result.matches, reference_matches(wl, events))


def _gaps(template: dict, strategy, ties: str, order: tuple[str, ...]) -> dict:
    wl = workload([{**template, "strategy": strategy}], seq_ties=ties)
    job = job_from_json(job_data(wl, trivial_plan(wl)))
    spec = job.patterns[0]
    return {v: [(g.var, g.closer == g.after, bool(g.predicates)) for g in gaps]
            for v, gaps in join_gaps(spec, job.stages["p"], list(order)).items()}


def test_gaps_are_closed_by_either_variable():
    """The orders the tests above draw reach both searches: forward from x when the join
    binds y last, back from y when it binds x last, with the condition on a variable bound
    before (msft's plan order c, a, b)."""
    template, _ = STRATEGIES["far"]
    assert _gaps(template, "next", "allow", ("a", "b", "c")) == {
        "b": [("__next_b", True, False)], "c": [("__next_c", True, True)]}
    assert _gaps(template, "next", "allow", ("c", "a", "b")) == {
        "b": [("__next_b", True, False), ("__next_c", False, True)]}
    # a next y among its own type with ties: x is an event of y's type, so y's gap waits
    # for x's neighbours to be bound (an own event is never a blocking one)
    assert _gaps(STRATEGIES["same_type"][0], "next", "allow", ("c", "b", "a")) == {}


def _previous_brute_force(ts: list[float], keys: list) -> list[float]:
    return [math.nan if k is None else
            max((u for u, j in zip(ts, keys, strict=True) if j == k and u < t),
                default=-math.inf)
            for t, k in zip(ts, keys, strict=True)]


@pytest.mark.parametrize("keyed", [True, False])
@settings(max_examples=80, deadline=None)
@given(stamps=st.lists(st.integers(0, 6), max_size=30),
       keys=st.lists(st.sampled_from(["x", "y", None]), min_size=30, max_size=30),
       cuts=st.lists(st.integers(0, 30), max_size=5))
def test_stamps_are_the_partitions_latest_earlier_timestamps(keyed, stamps, keys, cuts):
    """Time-ordered events cut into batches anywhere (ties across a cut included): each is
    stamped with the latest earlier timestamp of its key's events (of all, unkeyed), -inf
    for none, NaN when its key is missing."""
    ts = sorted(float(s) for s in stamps)
    keys = keys[:len(ts)]
    expected = _previous_brute_force(ts, keys if keyed else [0] * len(ts))
    timeline, got = Timeline(("k",) if keyed else ()), []
    bounds = sorted({0, len(ts), *(c for c in cuts if c <= len(ts))})
    for first, last in pairwise(bounds):
        batch = Columns({"__ts": np.array(ts[first:last]),
                         "k": np.array(keys[first:last], dtype=object)})
        timeline.stamp(batch)
        got += batch[timeline.column].tolist()
    assert np.array_equal(np.array(got), np.array(expected), equal_nan=True)


STREAMED = {
    "keyed": {"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
              "where": ["a.v < b.v"], "partition_by": ["k"], "within": 3},
    "unkeyed": {"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                "where": ["b.v > 0"], "within": 3},
}


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("strategy", ["strict", {"c": "strict"}, {"b": "strict", "c": "next"}])
@pytest.mark.parametrize("name", sorted(STREAMED))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(TYPES), st.integers(0, 12), st.integers(0, 4),
                               st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"])),
                     max_size=40))
def test_strict_read_in_time_order_equals_reference(name, strategy, ties, rows):
    """The in-process engine over a time-ordered CSV file read in batches of a few rows
    and matched in ranges of a few dozen: the events other than the pattern's own types never
    reach the matchers (their stamps stand for them), and the matches equal the reference."""
    template = STREAMED[name]
    wl = workload([{**template, "strategy": strategy}], seq_ties=ties, csv=True)
    events = frame(sorted(rows, key=lambda r: r[1]))
    expected = sorted(map(canonical, strategy_matches(workload([template], seq_ties=ties),
                                                      {"p": strategy}, events)["p"]))
    matches, metrics = run_read_in_small_batches(wl, events,
                                                 settings=[(engine, "REGION_ROWS", 8)])
    found = matches.get("p", [])
    assert found == expected
    own = {o.event_type for o in wl.pattern("p").positive}
    assert metrics["rows_to_matchers"] <= int(events["__type"].isin(own).sum())


@pytest.mark.parametrize("name", sorted(STREAMED))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(TYPES), st.integers(0, 30), st.integers(0, 4),
                               st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"])),
                     min_size=20, max_size=60))
def test_strict_read_by_byte_ranges_equals_reference(name, rows):
    """Strict contiguity in a file cut into 3 byte ranges, each read by its own process (the
    first range's events stamped, the others' checked by the hidden negations): the matches
    are the reference's. Stamping a later range's events gave a match across a cut that an
    event between forbids."""
    template = STREAMED[name]
    wl = workload([{**template, "strategy": "strict"}], seq_ties="strict", csv=True)
    events = frame(sorted(rows, key=lambda r: r[1]))
    expected = sorted(map(canonical, strategy_matches(workload([template], seq_ties="strict"),
                                                      {"p": "strict"}, events)["p"]))
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        path = Path(scratch) / "events.csv"
        write_events(events, wl, path)
        patch.setattr(engine, "REGION_ROWS", 8)
        patch.setattr(byte_ranges, "CHUNK_BYTES", 128)
        patch.setattr(range_cut, "MIN_RANGE_BYTES", 1)
        patch.setattr(byte_ranges, "FIRST_MARGIN_BYTES", 64)
        metrics = engine.run_local_job(job_data(wl, trivial_plan(wl)), [str(path)],
                                       Path(scratch) / "out", say=lambda _text: None,
                                       workers=3)
        found = read_matches(Path(scratch) / "out").get("p", [])
    assert metrics["reading"] == "by byte range in each worker"
    assert found == expected


def test_strict_cells_hold_as_many_matched_rows_as_any():
    """The byte-range reader's time cells are sized by the rows the matchers get: a strict
    pattern's (its own types: the other types' events only stamp them) are as wide as the
    same pattern's under `any`. Sized by every type's rows, they were 1.5 times narrower here
    (10 times on the engine benchmark's bars), and each cell costs a matching pass."""
    rows = [(t, minute, 1, 0.5, "x") for minute in range(200) for t in TYPES]
    events = frame(rows)
    cells = {}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "events.csv"
        for strategy in ("any", "strict"):
            wl = workload([{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "within": 3,
                            "strategy": strategy}], csv=True)
            write_events(events, wl, path)
            data = job_data(wl, trivial_plan(wl))
            file = byte_ranges.file_input(job_from_json(data), data, [str(path)], 60)
            cells[strategy] = file.cells.width
    # 60 of the 400 rows of A and B over 199 s (C's 200 only stamp them)
    assert cells == {"any": 60 * 199 / 400, "strict": 60 * 199 / 400}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(TYPES), st.integers(0, 8), st.integers(0, 4),
                               st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"])),
                     max_size=30))
def test_stamp_only_types_are_read_for_their_timestamps_alone(rows):
    """A type only strict contiguity reads (C here) is handed over as timestamps and keys:
    the batches' events are A's alone, each stamped with the latest earlier timestamp of
    its key among A's and C's events (B is not read), as by brute force."""
    wl = workload([{"name": "p", "structure": ["SEQ", "a:A", "c:A"], "within": 3}], csv=True)
    events = frame(sorted(rows, key=lambda r: r[1]))
    timeline = Timeline(("k",))
    got: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "events.csv"
        write_events(events, wl, path)
        reader = job_data(wl, trivial_plan(wl))["reader"]
        for batch in read_batches([str(path)], **reader, batch_bytes=64, only_types={"A"},
                                  stamp_only=StampOnly(frozenset({"C"}), ("k",))):
            batch.stamp([timeline])
            good = batch.columns()
            assert set(good["__type"]) <= {"A"}
            got.update(zip(good["__id"].tolist(), good[timeline.column].tolist(),
                           strict=True))
    read = events[events["__type"].isin(["A", "C"])]
    expected = _previous_brute_force(read["__ts"].tolist(), read["k"].tolist())
    assert got == {i: e for i, e, t in zip(read["__id"], expected, read["__type"], strict=True)
                   if t == "A"}
