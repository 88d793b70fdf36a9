"""A match preference (`prefer`) with an after-match skip, on the in-process engine read in
small batches and by 2 workers, equals MATCH_RECOGNIZE's definition written as a brute-force
reference (`reference_preferred_skip`): random streams with equal timestamps and two
partition keys; the pattern without a skip beside it is untouched."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.reference_after_match import reference_preferred_skip
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_after_match import (
    EVENT,
    optimized_and_run,
    patterns,
    run_by_two_workers,
    run_files,
)
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import workload

TEMPLATES = {  # name: (pattern, its elements as (variable, min, max), a variable to skip to)
    "optional_strict": ({"structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"], "c:A|C"],
                         "where": ["c.v >= a.v"], "strategy": "strict", "partition_by": ["k"],
                         "within": 3}, [("a", 1, 1), ("b", 0, 1), ("c", 1, 1)], "c"),
    "optional_last": ({"structure": ["SEQ", "a:A", "b:B", ["OPTIONAL", "c:C"]],
                       "where": ["b.v > a.v"], "strategy": "strict", "partition_by": ["k"],
                       "within": 3}, [("a", 1, 1), ("b", 1, 1), ("c", 0, 1)], "b"),
    "kleene": ({"structure": ["SEQ", "a:A", ["KLEENE", "b:B", {"min": 0, "max": 3}], "c:C"],
                "where": ["a.v <= b.v"], "within": 4}, [("a", 1, 1), ("b", 0, 3), ("c", 1, 1)],
               "c"),
}
SKIPS = ("to_next_event", "past_last_event", "to_last")


def skip_value(kind: str, var: str) -> str | dict:
    return {kind: var} if kind == "to_last" else kind


def expected(name: str, skip, prefer: str, events) -> dict[str, list]:
    """The reference's matches of p (skipped, preferred) and q (every match)."""
    template, elements, _ = TEMPLATES[name]
    wl = workload(patterns(template, None))
    found: dict[str, dict] = {}
    for core, matches in reference_matches(wl, events).items():
        user = wl.pattern(core).output_name
        for match in matches:
            match = {**match, "pattern": user}
            found.setdefault(user, {})[canonical(match)] = match
    chosen = reference_preferred_skip(list(found.get("p", {}).values()), skip,
                                      template.get("partition_by", []), elements, prefer)
    return {"p": sorted(map(canonical, chosen)),
            "q": sorted(map(canonical, found.get("q", {}).values()))}


def preferring(name: str, skip, prefer: str) -> list[dict]:
    template = TEMPLATES[name][0]
    first, second = patterns(template, skip)
    return [{**first, "prefer": prefer}, second]


@pytest.mark.parametrize("prefer", ["greedy", "reluctant"])
@pytest.mark.parametrize("kind", SKIPS)
@pytest.mark.parametrize("name", sorted(TEMPLATES))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=12), ordered=st.booleans())
def test_preferred_skip_equals_reference(name, kind, prefer, rows, ordered):
    skip = skip_value(kind, TEMPLATES[name][2])
    events = frame(sorted(rows, key=lambda r: r[1]) if ordered else rows)
    wl = workload(preferring(name, skip, prefer), csv=True)
    found, metrics = run_files(wl, events)
    want = expected(name, skip, prefer, events)
    assert {k: found.get(k, []) for k in want} == want
    assert metrics["after_match_skipped"]["p"] == len(want["q"]) - len(want["p"])


@pytest.mark.parametrize("prefer", ["greedy", "reluctant"])
def test_preferred_skip_across_worker_ranges(prefer):
    """Matches sharing a first event found in different byte ranges: 2 workers, the same
    matches as the reference, and the preference decides some of them."""
    import random

    rng = random.Random(3)
    rows = sorted(((rng.choice("AABC"), rng.randint(0, 60), rng.randint(0, 4),
                    rng.choice([0.5, 2.0]), rng.choice("xy")) for _ in range(120)),
                  key=lambda r: r[1])
    events = frame(rows)
    found = run_by_two_workers(workload(preferring("kleene", "past_last_event", prefer),
                                        csv=True), events)
    want = expected("kleene", "past_last_event", prefer, events)
    other = "reluctant" if prefer == "greedy" else "greedy"
    assert want["p"] != expected("kleene", "past_last_event", other, events)["p"]
    assert {k: found.get(k, []) for k in want} == want


@pytest.mark.parametrize(("prefer", "kept"), [
    ("greedy", [(1, 2, 3, 4), (5, 7, 8)]),
    ("reluctant", [(1, 4), (5, 6)]),
    (None, [(1, 2, 3, 4), (5, 6)]),  # no preference: the first match to complete
])
def test_run_command_keeps_the_preferred_match_of_each_first_event(tmp_path, prefer, kept):
    """A1 B2 B3 C4 A5 C6 B7 C8 under SEQ(a, b{0,3}, c), skipping past the last event: greedy
    takes the most Bs from each A, reluctant the fewest, then the earliest C; `cepplan show`
    says which."""
    import json

    from tests.in_process import cepplan

    pattern = {"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B", {"min": 0, "max": 3}],
                                          "c:C"], "within": 3, "after_match": "past_last_event",
               **({"prefer": prefer} if prefer else {})}
    optimized_and_run(tmp_path, "ABC", [pattern],
                      "id,kind,ts,k\n1,A,1,x\n2,B,2,x\n3,B,3,x\n4,C,4,x\n"
                      "5,A,5,x\n6,C,6,x\n7,B,7,x\n8,C,8,x\n", "-q")
    found = [json.loads(line) for path in sorted((tmp_path / "out" / "matches").glob("*.jsonl"))
             for line in path.read_text().splitlines()]
    assert sorted(tuple(sorted(e["id"] for bound in m["events"].values()
                               for e in (bound if isinstance(bound, list) else [bound])))
                  for m in found) == kept
    shown = cepplan("show", str(tmp_path / "w.json")).stdout
    assert (f"past_last_event, the {prefer} match of each first event" in shown) == bool(prefer)


def test_spark_job_keeps_the_preferred_matches(spark, tmp_path):
    """The Spark batch job runs the same after-match pass: each template, greedy and
    reluctant, in one job over a stream with equal timestamps and two keys, equals the
    reference."""
    import random

    from cepplan.engine_adapter.job_spec import job_data
    from cepplan.engine_adapter.spark.job import run_job
    from cepplan.planner.plan import trivial_plan
    from cepplan.stats.synth_write import write_events
    from tests.engine.test_local_engine import read_matches

    rng = random.Random(1)
    rows = sorted(((rng.choice("AABC"), rng.randint(0, 20), rng.randint(0, 4),
                    rng.choice([0.5, 2.0]), rng.choice("xy")) for _ in range(60)),
                  key=lambda r: r[1])
    events = frame(rows)
    runs = [(name, prefer) for name in sorted(TEMPLATES) for prefer in ("greedy", "reluctant")]
    wl = workload([{**TEMPLATES[name][0], "name": f"{name}_{prefer}",
                    "after_match": "past_last_event", "prefer": prefer}
                   for name, prefer in runs], csv=True)
    path = tmp_path / "events.csv"
    write_events(events, wl, path)
    run_job(spark, job_data(wl, trivial_plan(wl)), [str(path)], str(tmp_path / "out"),
            say=lambda _: None)
    got = read_matches(tmp_path / "out")
    for name, prefer in runs:
        want = expected(name, "past_last_event", prefer, events)["p"]
        assert want, name
        assert got.get(f"{name}_{prefer}") == [(f"{name}_{prefer}", ids) for _, ids in want]
