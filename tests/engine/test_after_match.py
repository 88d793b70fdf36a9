"""After-match skips (`after_match`) on the in-process engine equal the brute-force reference
written from their definition (`reference_after_match`), on random streams with equal
timestamps and two partition keys, read all at once, in time ranges, and by 2 workers; the
patterns without a skip beside them are untouched, shared subtrees or not."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import engine
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.reference_after_match import reference_skip
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.small_reads import run_read_in_small_batches
from tests.engine.test_local_engine import read_matches
from tests.engine.test_local_workers import _run as run_in_workers
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import TYPES, workload

TEMPLATES = {
    "seq_keyed": ({"structure": ["SEQ", "a:A", "b:B", "c:A"], "where": ["a.v <= b.v"],
                   "partition_by": ["k"], "within": 4}, "b"),
    "kleene": ({"structure": ["SEQ", "a:A", ["KLEENE", "b:B", {"max": 3}], "c:C"],
                "where": ["a.v <= b.v"], "within": 4}, "b"),
    "alternation_optional": ({"structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"], "c:A|C"],
                              "where": ["c.v >= a.v"], "partition_by": ["k"], "within": 3},
                             "c"),
    "and_keyed": ({"structure": ["AND", "a:A", "b:B"], "where": ["a.v + b.v > 2"],
                   "partition_by": ["k"], "within": 3}, None),
}
SKIPS = ("to_next_event", "past_last_event", "to_first", "to_last")
EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 6), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


def skip_value(kind: str, var: str | None) -> str | dict | None:
    """The `after_match` value, None where the template has no variable to skip to."""
    if kind in ("to_first", "to_last"):
        return None if var is None else {kind: var}
    return kind


def patterns(template: dict, skip: str | dict | None) -> list[dict]:
    """The pattern with the skip (`p`) and the same without one (`q`): planned together, so
    that they may share their subtrees."""
    return [{"name": "p", **template, **({"after_match": skip} if skip else {})},
            {"name": "q", **template}]


def run_files(wl, events) -> tuple[dict, dict]:
    """(matches by pattern, metrics) of the in-process engine over the events as a CSV
    file, read in batches of a few rows (matched in ranges as read when in time order)."""
    return run_read_in_small_batches(wl, events, settings=[(engine, "REGION_ROWS", 6)])


def expected(template: dict, skip, events) -> dict[str, list]:
    """The reference's matches of p (skipped) and q (every match)."""
    wl = workload(patterns(template, None))
    found: dict[str, dict] = {}
    for core, matches in reference_matches(wl, events).items():
        name = wl.pattern(core).output_name  # alternatives are written as the user's pattern
        for match in matches:  # each core pattern's reference finds the user pattern's
            match = {**match, "pattern": name}
            found.setdefault(name, {})[canonical(match)] = match
    found = {name: list(matches.values()) for name, matches in found.items()}
    key = template.get("partition_by", [])
    return {"p": sorted(map(canonical, reference_skip(found.get("p", []), skip, key))),
            "q": sorted(map(canonical, found.get("q", [])))}


def random_rows(seed: int, count: int, last: int) -> list[tuple]:
    """`count` events of TYPES in time order, at whole times 0 .. `last` (ties), two keys."""
    import random

    rng = random.Random(seed)
    return sorted(((rng.choice(TYPES), rng.randint(0, last), rng.randint(0, 4),
                    rng.choice([0.5, 2.0]), rng.choice("xy")) for _ in range(count)),
                  key=lambda r: r[1])


@pytest.mark.parametrize("kind", SKIPS)
@pytest.mark.parametrize("name", sorted(TEMPLATES))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=12), ordered=st.booleans())
def test_skip_equals_reference(name, kind, rows, ordered):
    template, var = TEMPLATES[name]
    skip = skip_value(kind, var)
    if skip is None:
        return
    events = frame(sorted(rows, key=lambda r: r[1]) if ordered else rows)
    wl = workload(patterns(template, skip), csv=True)
    found, metrics = run_files(wl, events)
    want = expected(template, skip, events)
    assert {k: found.get(k, []) for k in want} == want
    assert metrics["after_match_skipped"]["p"] == len(want["q"]) - len(want["p"])


def run_by_two_workers(wl, events) -> dict:
    """The matches by pattern of 2 in-process workers over the events as a CSV file, cut
    into byte ranges of a few dozen rows."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "events.csv"
        write_events(events, wl, path)
        metrics = run_in_workers(job_data(wl, trivial_plan(wl)), [str(path)],
                                 Path(scratch) / "out", 2)
        assert metrics["workers"] == 2
        return read_matches(Path(scratch) / "out")


@pytest.mark.parametrize("kind", ["past_last_event", "to_last"])
def test_skip_across_worker_ranges(kind):
    """A match kept in one byte range skips matches of the next range: 2 workers, ranges of
    a few dozen rows, the same matches as the reference."""
    rows = random_rows(5, 90, 40)
    template, var = TEMPLATES["seq_keyed"]
    skip = skip_value(kind, var)
    events = frame(rows)
    wl = workload(patterns(template, skip), csv=True)
    found = run_by_two_workers(wl, events)
    want = expected(template, skip, events)
    assert len(want["p"]) < len(want["q"])
    assert {k: found.get(k, []) for k in want} == want


def test_worked_example():
    """A1 A2 B3 B4 | A7 B8 on key x, A5 B6 on key y, SEQ(a, b): past_last_event keeps
    (A1, B3), (A7, B8) and (A5, B6); to_next_event keeps one match per first event."""
    rows = [("A", 1, 1, 0.5, "x"), ("A", 2, 1, 0.5, "x"), ("B", 3, 1, 0.5, "x"),
            ("B", 4, 1, 0.5, "x"), ("A", 5, 1, 0.5, "y"), ("B", 6, 1, 0.5, "y"),
            ("A", 7, 1, 0.5, "x"), ("B", 8, 1, 0.5, "x")]
    template = {"structure": ["SEQ", "a:A", "b:B"], "partition_by": ["k"], "within": 10}
    events = frame(rows)
    kept = {}
    for skip in ("past_last_event", "to_next_event"):
        found, _ = run_files(workload(patterns(template, skip), csv=True), events)
        kept[skip] = sorted((m[1][0][1][0][1], m[1][1][1][0][1]) for m in found["p"])
    assert kept == {"past_last_event": [(0, 2), (4, 5), (6, 7)],
                    "to_next_event": [(0, 2), (1, 2), (4, 5), (6, 7)]}


SHARED = [  # one SEQ prefix under every skip: candidates for shared subtrees
    {"name": f"{prefix}_{skip if isinstance(skip, str) else 'to_last'}", "structure": structure,
     "where": ["a.v < b.v"], "within": 4, "partition_by": ["k"],
     **({"after_match": skip} if skip != "any" else {})}
    for prefix, structure in (("abc", ["SEQ", "a:A", "b:B", "c:C"]), ("ab", ["SEQ", "a:A", "b:B"]))
    for skip in ("any", "to_next_event", "past_last_event", {"to_last": "b"})]


@pytest.mark.parametrize("seed", range(2))
def test_shared_plan_skips_each_pattern_alone(seed):
    """Patterns that differ only in their skip, planned with sharing (tabu search): the plan
    is the plan without the skips, subtrees are shared, and each pattern's matches are the
    reference's under its own skip (none of another's)."""
    import random

    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
    from cepplan.planner.evaluation import EvaluationSettings, evaluation

    def planned(patterns):
        wl = workload(patterns, csv=True)
        return wl, evaluation(wl, wl.statistics, trivial_plan(wl),
                              EvaluationSettings("tabu", "edge", 0.5, seed=1))

    rng = random.Random(seed)
    rows = sorted(((rng.choice(TYPES), rng.randint(0, 14), rng.randint(0, 4), 0.5,
                    rng.choice("xy")) for _ in range(40)), key=lambda r: r[1])
    events = frame(rows)
    plain = [{k: v for k, v in p.items() if k != "after_match"} for p in SHARED]
    wl, plan = planned(SHARED)
    _, plain_plan = planned(plain)
    assert plan.to_json()["patterns"] == plain_plan.to_json()["patterns"]
    timed = ("trace", "search")  # the search's own timings
    assert {k: v for k, v in plan.sharing.items() if k not in timed} == \
        {k: v for k, v in plain_plan.sharing.items() if k not in timed}
    assert sharing_plan(engine.job_from_json(job_data(wl, plan))).uses, "nothing shared"
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "events.csv"
        write_events(events, wl, path)
        engine.run_local_job(job_data(wl, plan), [str(path)], Path(scratch) / "out",
                             say=lambda _text: None)
        found = read_matches(Path(scratch) / "out")
    every = reference_matches(workload(plain), events)
    for pattern in SHARED:
        want = reference_skip(every[pattern["name"]], pattern.get("after_match", "any"), ["k"])
        assert found.get(pattern["name"], []) == sorted(map(canonical, want)), pattern["name"]


def optimized_and_run(tmp_path: Path, types: str, patterns: list[dict], events: str,
                      *options: str):
    """`cepplan optimize` then `cepplan run` (with `options`) of `patterns` over one-letter
    event types with a string attribute `k`, rated 1 each, on the CSV text `events`
    (id,kind,ts,k) in `tmp_path`: the run's finished process, checked to have succeeded; its
    output in `tmp_path / "out"`."""
    import json

    from tests.in_process import cepplan

    document = {"format": "cepplan.workload/1", "time_unit": "s",
                "source": {"format": "csv", "header": True, "type_column": "kind",
                           "time_column": "ts", "id_column": "id"},
                "event_types": {t: {"attributes": {"k": "string"}} for t in types},
                "patterns": patterns, "statistics": {"rates": dict.fromkeys(types, 1)}}
    (tmp_path / "w.json").write_text(json.dumps(document))
    (tmp_path / "e.csv").write_text(events)
    assert cepplan("optimize", str(tmp_path / "w.json"), "-o", str(tmp_path / "plan.json"),
                   "-q").returncode == 0
    done = cepplan("run", str(tmp_path / "plan.json"), str(tmp_path / "e.csv"), "-o",
                   str(tmp_path / "out"), *options)
    assert done.returncode == 0, done.stderr
    return done


def test_run_command_writes_the_kept_matches_and_says_what_it_dropped(tmp_path):
    """`cepplan optimize` then `cepplan run` (the worked example's past_last_event): the
    kept matches in the file, and the summary says how many the skip dropped."""
    from tests.in_process import cepplan

    template = {"structure": ["SEQ", "a:A", "b:B"], "partition_by": ["k"], "within": 10}
    done = optimized_and_run(tmp_path, "AB", patterns(template, "past_last_event"),
                             "id,kind,ts,k\n1,A,1,x\n2,A,2,x\n3,B,3,x\n4,B,4,x\n"
                             "5,A,5,y\n6,B,6,y\n7,A,7,x\n8,B,8,x\n")
    found = read_matches(tmp_path / "out")
    assert sorted(tuple(i for _, ((_, i),) in m[1]) for m in found["p"]) == \
        [(1, 3), (5, 6), (7, 8)]
    assert len(found["q"]) == 8
    assert "p: 5 of the matches above dropped by its after-match skip" in done.stdout
    shown = cepplan("show", str(tmp_path / "w.json")).stdout
    assert "after match: past_last_event (its matches as found, skipped when written)" in shown
