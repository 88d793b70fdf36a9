"""Count windows (`"within": "N events"`) on the in-process engine equal a brute-force
reference written from their definition: the match's first and last events lie at most N
positions apart among its partition's events (every type counts, those the pattern does not
bind too), numbered in (timestamp, id) order; on random streams full of equal timestamps,
under every evaluation order and chunk size, with and without a partition key."""

from __future__ import annotations

import copy
import random

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import slices
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.constructs import drawn_run, user_workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.small_reads import run_read_in_small_batches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_spark_job import read_matches as read_spark_matches
from tests.engine.workloads import TYPES, workload

PATTERNS = {
    "join": {"structure": ["SEQ", "a:A", "b:B"], "where": ["b.v > a.v"]},
    "same_type": {"structure": ["SEQ", "a:A", "b:A", "c:A"], "where": ["a.v <= b.v"]},
    "and": {"structure": ["AND", "a:A", "b:B"], "where": ["a.v + b.v > 2"]},
    "kleene": {"structure": ["SEQ", "a:A", ["KLEENE", "b:B"]], "where": ["a.v <= b.v"]},
    "not_middle": {"structure": ["SEQ", "a:A", ["NOT", "x:C"], "b:B"], "where": ["x.v >= 2"]},
    "next": {"structure": ["SEQ", "a:A", "b:B"], "where": ["b.v > a.v"], "strategy": "next"},
    "optional": {"structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"], "c:C|A"],
                 "where": ["a.v <= c.v"]},
}

EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 4), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


def pattern(name: str, within: str | float, keyed: bool) -> list[dict]:
    out = {"name": "p", **copy.deepcopy(PATTERNS[name]), "within": within}
    if keyed:
        out["partition_by"] = ["k"]
    return [out]


def positions(events: pd.DataFrame, keyed: bool) -> dict[int, int]:
    """Each event's id -> its position among its partition's events, by (ts, id)."""
    out: dict[int, int] = {}
    groups = events.groupby("k") if keyed else [(None, events)]
    for _, group in groups:
        ordered = sorted(zip(group["__ts"], group["__id"], strict=True))
        out.update({int(event_id): i for i, (_, event_id) in enumerate(ordered)})
    return out


def ids_of(match: dict) -> list[int]:
    """The ids of every event a match binds (a Kleene variable's several)."""
    out = []
    for bound in match["events"].values():
        out += [e["id"] for e in bound] if isinstance(bound, list) else [bound["id"]]
    return out


def count_reference(name: str, count: int, keyed: bool, events: pd.DataFrame) -> list[dict]:
    """Every match without a window bound (a time window longer than the stream), kept when
    its events lie at most `count` positions apart."""
    unbounded = user_workload(pattern(name, 10**6, keyed), "strict")
    found = reference_matches(unbounded, events)["p"]
    at = positions(events, keyed)
    return [m for m in found if max(at[i] for i in ids_of(m)) - min(at[i] for i in ids_of(m))
            <= count]


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("name", sorted(PATTERNS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=12), count=st.integers(1, 4), chunk=st.integers(1, 5),
       data=st.data())
def test_count_window_equals_reference(name, keyed, rows, count, chunk, data):
    wl = workload(pattern(name, f"{count} events", keyed))
    events = frame(rows)
    got = drawn_run(wl, events, chunk, data).get("p", [])
    assert got == sorted(map(canonical, count_reference(name, count, keyed, events)))
    assert len(set(got)) == len(got), "a match was reported twice"


def test_every_type_counts():
    """A worked case: A at position 0, two C (a type the pattern does not bind) at 1 and 2,
    B at 3. Within 2 events nothing matches; within 3 events (A, B) does; on another key
    the C events do not count."""
    rows = [("A", 0, 1, 0.5, "x"), ("C", 1, 0, 0.5, "x"), ("C", 1, 0, 0.5, "x"),
            ("C", 2, 0, 0.5, "y"), ("B", 3, 5, 0.5, "x")]
    found = {}
    for count in (2, 3):
        for keyed in (False, True):
            wl = workload(pattern("join", f"{count} events", keyed))
            result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
            found[count, keyed] = len(result.matches["p"])
    assert found == {(2, False): 0, (2, True): 0, (3, False): 0, (3, True): 1}


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("name", ["join", "kleene", "not_middle"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, min_size=10, max_size=40), count=st.integers(1, 6))
def test_event_files_with_workers_equal_reference(name, keyed, rows, count):
    """`cepplan run`'s engine over a CSV file out of time order, read in batches of a few
    rows, each key cut into time slices of a few events, asked for 2 workers: one process
    numbers the positions over the whole input and says why; the matches are the
    reference's."""
    wl = workload(pattern(name, f"{count} events", keyed), csv=True)
    events = frame(rows)
    expected = sorted(map(canonical, count_reference(name, count, keyed, events)))
    said: list[str] = []
    matches, metrics = run_read_in_small_batches(
        wl, events, settings=[(slices, "SLICE_ROWS", 3)], say=said.append, workers=2)
    found = matches.get("p", [])
    assert found == expected
    assert metrics["workers"] == 1
    assert "matching with one worker: a pattern has a count window" in " ".join(said)


def test_spark_job_equals_reference(spark, tmp_path):
    """The generated Spark job numbers every good row's position with a window function
    before tagging and matches each key group in one time range: its matches equal the
    reference's, keyed and not, with a type the patterns do not bind counted."""
    rng = random.Random(3)
    rows = [(rng.choice(TYPES), rng.randint(0, 12), rng.randint(0, 4), rng.choice([0.5, 2.0]),
             rng.choice("xy")) for _ in range(40)]
    events = frame(rows)
    templates = {"join": (3, True), "kleene": (4, False), "not_middle": (5, True)}
    patterns = [{**pattern(name, f"{count} events", keyed)[0], "name": name}
                for name, (count, keyed) in templates.items()]
    wl = workload(patterns, csv=True)
    path = tmp_path / "events.csv"
    write_events(events, wl, path)
    expected = {name: sorted(map(canonical, count_reference(name, count, keyed, events)))
                for name, (count, keyed) in templates.items()}
    assert all(expected.values())
    metrics = run_job(spark, job_data(wl, trivial_plan(wl)), [str(path)], str(tmp_path / "out"),
                      say=lambda _: None)
    found = read_spark_matches(tmp_path / "out")  # (pattern, bindings): the reference's is p
    assert {k: [m[1:] for m in v] for k, v in found.items()} == {
        k: [m[1:] for m in v] for k, v in expected.items()}
    assert metrics["matches"] == {k: len(v) for k, v in expected.items()}
