"""Count windows on the Spark stream's stateful step (`stream_state.StreamStep`, run here as
Spark runs it per micro-batch and key group, its state through Spark's group state, a
micro-batch run twice as after a failure before its commit): the key groups together give
the brute-force reference's matches, each once; and `cepplan run --follow --engine spark` on
a real local Spark gives them too."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.reference_matcher import canonical
from tests.engine.test_count_windows import EVENT, count_reference, pattern
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_spark_stream_plans import _batches, _run
from tests.engine.test_stream_matches import arrivals
from tests.engine.workloads import TYPES, workload

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

# every pattern keyed by k: the stream is matched in key groups
COUNTED = {"join": ("join", 3), "kleene": ("kleene", 3), "not_middle": ("not_middle", 2)}


def counted_patterns() -> list[dict]:
    return [{**pattern(template, f"{count} events", True)[0], "name": name}
            for name, (template, count) in COUNTED.items()]


def keyed_workload():
    return workload(counted_patterns(), csv=True)


def reference(events: pd.DataFrame) -> dict:
    want = {name: sorted((name, *canonical(m)[1:])
                         for m in count_reference(template, count, True, events))
            for name, (template, count) in COUNTED.items()}
    return {name: found for name, found in want.items() if found}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=24), delay=st.sampled_from([0.0, 1.0]),
       every=st.integers(1, 6), groups=st.integers(1, 3), replay=st.integers(0, 5),
       seed=st.integers(0, 100))
def test_key_groups_give_the_reference_matches(rows, delay, every, groups, replay, seed):
    events = arrivals(frame(sorted(rows, key=lambda r: r[1])), delay, seed)
    wl = keyed_workload()
    data = job_data(wl, trivial_plan(wl))
    data["options"]["max_delay"] = delay
    with tempfile.TemporaryDirectory() as folder:
        batches = _batches(events, list(range(every, len(rows), every)), {}, Path(folder), wl)
    found: dict[str, list] = {}
    for group in range(groups):
        for name, matches in _run(data, batches, replay, group, groups)[0].items():
            found[name] = sorted(found.get(name, []) + matches)
    assert found == reference(events)


def test_spark_stream_with_count_windows_and_a_skip(tmp_path):
    """`cepplan run --follow DIR --engine spark` on a real local Spark, in key groups: the
    count windows' matches are the reference's, the skip keeps the reference's, each once."""
    from tests.engine.reference_after_match import reference_skip
    from tests.engine.reference_matcher import reference_matches
    from tests.engine.test_spark_stream import _committed
    from tests.engine.workloads import CSV_SOURCE
    from tests.in_process import cepplan

    skip = {"name": "skipped", "structure": ["SEQ", "a:A", "b:B"], "within": 4,
            "partition_by": ["k"], "after_match": "past_last_event"}
    document = {"format": "cepplan.workload/1", "time_unit": "s", "source": CSV_SOURCE,
                "options": {"max_delay": 1.0},
                "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                                for t in TYPES},
                "patterns": [*counted_patterns(), skip],
                "statistics": {"rates": dict.fromkeys(TYPES, 1)}}
    (tmp_path / "w.json").write_text(json.dumps(document))
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", tmp_path / "w.json", "-o", plan, "-q").returncode == 0
    rng = random.Random(9)
    events = arrivals(frame(sorted(((rng.choice(TYPES), rng.randint(0, 10), rng.randint(0, 4),
                                     0.5, rng.choice("xyz")) for _ in range(30)),
                                   key=lambda r: r[1])), 1.0, 9)
    wl = keyed_workload()
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    for number in range(3):
        write_events(events.iloc[10 * number:10 * (number + 1)], wl,
                     source / f"part-{number}.csv")
    (source / "_END").touch()
    done = cepplan("run", plan, "--follow", source, "-o", out, "--engine", "spark",
                   "--master", "local[2]", "--trigger", "0.5", "-q")
    assert done.returncode == 0, done.stderr
    found: dict[str, list] = {}
    for line in _committed(out, "matches"):
        match = json.loads(line)
        found.setdefault(match["pattern"], []).append(canonical(match))
    plain = reference_matches(workload([{k: v for k, v in skip.items()
                                         if k != "after_match"}]), events)["skipped"]
    want = {**reference(events),
            "skipped": sorted(map(canonical, reference_skip(plain, "past_last_event",
                                                            ["k"])))}
    assert {k: sorted(v) for k, v in found.items()} == {k: v for k, v in want.items() if v}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=24), every=st.integers(1, 6),
       switch_at=st.lists(st.integers(0, 5), min_size=1, max_size=3), seed=st.integers(0, 100))
def test_plans_switched_keep_the_positions(rows, every, switch_at, seed):
    """Plans arriving in the stream (the other evaluation order and back, `stream_plans`):
    the events held are tagged again for the new plan, those no pattern binds kept to be
    numbered; the matches are the reference's."""
    from tests.engine.example_data import stepwise_plan

    events = arrivals(frame(sorted(rows, key=lambda r: r[1])), 1.0, seed)
    wl = keyed_workload()
    jobs = [job_data(wl, trivial_plan(wl)), job_data(wl, stepwise_plan(wl))]
    for job in jobs:
        job["options"]["max_delay"] = 1.0
    plans: dict[int, list[str]] = {}
    for index, number in enumerate(switch_at):
        plans.setdefault(number, []).append(json.dumps(jobs[(index + 1) % 2]))
    with tempfile.TemporaryDirectory() as folder:
        batches = _batches(events, list(range(every, len(rows), every)), plans, Path(folder),
                           wl)
    assert _run(jobs[0], batches)[0] == reference(events)
