"""Timed-out partial matches (`"timed_out": true`) on the in-process engine equal the
brute-force reference written from their definition, on random streams with equal timestamps
and several partition keys, under every evaluation order."""

from __future__ import annotations

import copy
import json
import random
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.engine_adapter.runtime.timed_out_counts import with_timed_out
from cepplan.planner.plan import trivial_plan
from tests.engine.reference_matcher import canonical
from tests.engine.reference_timed_out import timed_out_matches
from tests.engine.test_matcher_vs_reference import frame, with_orders
from tests.engine.test_stream_matches import stream
from tests.engine.workloads import TYPES, workload

SEQUENCES = {
    "join": {"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
             "where": ["a.v < b.v", "c.v > 1"], "within": 4},
    "same_type": {"name": "p", "structure": ["SEQ", "a:A", "b:A", "c:A"],
                  "where": ["a.v <= b.v", "c.w > a.w"], "within": 3},
    "keyed": {"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A", "d:C"],
              "where": ["b.v > a.v", "c.v != b.v", "d.w >= a.w"],
              "partition_by": ["k"], "within": 5},
    "pair": {"name": "p", "structure": ["SEQ", "a:B", "b:B"], "where": ["b.v == a.v"],
             "within": 2},
}

EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 8), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y", "z"]))


def written(out: Path) -> tuple[dict[str, list], list[tuple]]:
    """A run's output directory `out` read: (its complete matches per pattern, canonical, from
    OUT/matches/; its timed-out partial matches as (k, timeout, canonical) from
    OUT/timed_out/), each folder's part files holding only its own kind of line."""
    complete: dict[str, list] = {}
    for obj in _lines(out / "matches"):
        assert "timed_out" not in obj, f"a timed-out partial match among the matches: {obj}"
        complete.setdefault(obj["pattern"], []).append(canonical(obj))
    timed = []
    for obj in _lines(out / "timed_out"):
        timed.append((obj["timed_out"]["k"], obj["timed_out"]["at"], canonical(obj)))
    return {k: sorted(v) for k, v in complete.items()}, sorted(timed)


def _lines(folder: Path) -> list[dict]:
    """The JSON lines of the part files in `folder` (none if it does not exist)."""
    parts = sorted(folder.glob("part-*.jsonl")) if folder.is_dir() else []
    return [json.loads(line) for part in parts for line in part.read_text().splitlines()]


def found(result) -> list:
    """The timed-out partial matches a run wrote, each as (k, timeout, its events)."""
    return sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                  for name, matches in result.matches.items() for m in matches
                  if "timed_out" in m)


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=12), chunk=st.integers(1, 5), data=st.data())
def test_timed_out_equals_reference(name, ties, rows, chunk, data):
    spec = copy.deepcopy(SEQUENCES[name])
    plain = workload([spec], seq_ties=ties)
    wl = workload([spec | {"timed_out": True}], seq_ties=ties)
    events = frame(rows)
    plan = with_orders(trivial_plan(wl), wl, data)
    result = run_local(events, job_from_json(job_data(wl, plan)), chunk_events=chunk)
    expected = sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                      for m in timed_out_matches(plain, "p", events))
    assert found(result) == expected
    assert len(set(expected)) == len(expected)
    full = run_local(events, job_from_json(job_data(plain, trivial_plan(plain))))
    assert sorted(map(canonical, result.matches["p"])) == \
        sorted(map(canonical, full.matches["p"])), "timed_out changed the pattern's matches"


def test_worked_example():
    """A(v=1)@0, B(v=2)@1, A(v=3)@2, C(v=0)@3, B(v=0)@9, C(v=5)@12 under
    SEQ(a:A, b:B, c:C) with a.v < b.v, c.v > 1 within 4: (A@0, B@1) is never followed by a C
    with v > 1 within 4 (times out at 4, k=2); A@2 has no later B with v > 3 within 4 (times
    out at 6, k=1); A@0 alone was extended by B@1."""
    rows = [("A", 0, 1, 0.5, "x"), ("B", 1, 2, 0.5, "x"), ("A", 2, 3, 0.5, "x"),
            ("C", 3, 0, 0.5, "x"), ("B", 9, 0, 0.5, "x"), ("C", 12, 5, 0.5, "x")]
    wl = workload([SEQUENCES["join"] | {"timed_out": True}])
    result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
    written = sorted((m["timed_out"]["k"], m["timed_out"]["at"],
                      [e["id"] for e in m["events"].values()])
                     for matches in result.matches.values() for m in matches)
    assert written == [(1, 6.0, [2]), (2, 4.0, [0, 1])]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=12), cuts=st.lists(st.integers(1, 11), max_size=4))
def test_a_stream_writes_the_reference_timed_out_matches(rows, cuts):
    """Fed as a live stream in micro-batches (in time order, no delay), the matches written
    are the batch reference's, the timed-out partial matches under OUT/timed_out/: a partial
    match is written once the watermark passes its timeout, and metrics.json counts them per
    prefix length."""
    rows = sorted(rows, key=lambda r: r[1])  # ids are arrival positions
    spec = SEQUENCES["keyed"]
    plain = workload([spec])
    wl = positional(workload([spec | {"timed_out": True}], csv=True))
    events = frame(rows)
    with tempfile.TemporaryDirectory() as folder:
        data = job_data(wl, trivial_plan(wl))
        _, late, metrics = stream(wl, data, events, 0.0, cuts, Path(folder))
        complete, timed = written(Path(folder) / "out")
    assert late == []
    expected = timed_out_matches(plain, "p", events)
    full = run_local(events, job_from_json(job_data(plain, trivial_plan(plain))))
    assert complete.get("p", []) == sorted(map(canonical, full.matches["p"]))
    assert timed == sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                           for m in expected)
    by_k = {str(k): sum(m["timed_out"]["k"] == k for m in expected) for k in (1, 2, 3)}
    assert with_timed_out(metrics, data["patterns"])["timed_out"] == {"p": by_k}


def positional(wl):
    """`wl` reading its CSV events without their id column: ids are row positions, continued
    over the stream's reads (`StreamMatcher`'s `positional_ids`)."""
    from dataclasses import replace

    return replace(wl, source=replace(wl.source, id_column=None))


def test_cepplan_run_names_them_by_their_pattern(tmp_path):
    """`cepplan optimize` and `run`: the worked example plus an A at 10, whose timeout (14)
    lies past the last event (12): the tables name the hidden patterns by the user's pattern
    and k, that A
    is warned of in the pattern's words, and metrics.json counts per k."""
    from cepplan.stats.synth_write import write_events
    from tests.engine.workloads import CSV_SOURCE
    from tests.in_process import cepplan

    rows = [("A", 0, 1, 0.5, "x"), ("B", 1, 2, 0.5, "x"), ("A", 2, 3, 0.5, "x"),
            ("C", 3, 0, 0.5, "x"), ("B", 9, 0, 0.5, "x"), ("A", 10, 9, 0.5, "x"),
            ("C", 12, 5, 0.5, "x")]
    raw = {"format": "cepplan.workload/1", "time_unit": "s", "source": CSV_SOURCE,
           "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                           for t in TYPES},
           "patterns": [SEQUENCES["join"] | {"timed_out": True}],
           "statistics": {"rates": {"A": 1, "B": 1, "C": 1}}}
    (tmp_path / "workload.json").write_text(json.dumps(raw))
    write_events(frame(rows), workload(raw["patterns"], csv=True), tmp_path / "events.csv")
    planned = cepplan("optimize", "workload.json", "-o", "plan.json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert "p timed out k=1 " in planned.stdout and "__timed_out" not in planned.stdout
    run = cepplan("run", "plan.json", "events.csv", "-o", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "p timed out k=1 " in run.stdout and "p timed out k=2 " in run.stdout
    assert "__timed_out" not in run.stdout + run.stderr
    assert "warning: pattern p: 1 partial match(es) of 1 event(s) not timed out yet" in \
        run.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["timed_out"] == {"p": {"1": 1, "2": 1}}
    complete, timed = written(tmp_path / "out")
    assert complete == {}  # no C with v > 1 follows an (A, B) within 4
    assert [(k, at) for k, at, _ in timed] == [(1, 6.0), (2, 4.0)]
    assert timed == sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                           for m in timed_out_matches(workload([SEQUENCES["join"]]), "p",
                                                      frame(rows)))
    again = cepplan("run", "plan.json", "events.csv", "-o", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stderr  # its own earlier output, timed_out/ included
    assert written(tmp_path / "out") == (complete, timed)


def test_show_lists_the_hidden_patterns_under_their_pattern():
    """`cepplan show`: each hidden pattern one line under the user's pattern, not a pattern
    of its own (the detection graph, the planner's view, still has them)."""
    from cepplan.cli.show_cmd import describe

    lines = describe(workload([SEQUENCES["join"] | {"timed_out": True}]))
    at = lines.index("  p = SEQ(a:A, b:B, c:C)  within 4 s")
    hidden = [line for line in lines[at:] if line.startswith("    timed-out")]
    assert hidden == ["    timed-out partial matches of 1 event(s): SEQ(a:A, !b:B), planned as "
                      "p__timed_out_1",
                      "    timed-out partial matches of 2 event(s): SEQ(a:A, b:B, !c:C), "
                      "planned as p__timed_out_2"]
    listed = lines[lines.index("patterns:"):next(i for i, line in enumerate(lines)
                                                  if line.startswith("detection graph"))]
    assert not any(line.startswith("  p__timed_out") for line in listed)


@pytest.mark.parametrize("seed", range(3))
def test_a_shared_plan_finds_the_reference_timed_out_matches(seed):
    """Planned with sharing (tabu search), the hidden patterns share the pattern's prefix
    subtrees: the same lines with and without sharing, the reference's."""

    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
    from cepplan.planner.evaluation import EvaluationSettings, evaluation

    rng = random.Random(seed)
    rows = [(rng.choice(TYPES), rng.randint(0, 14), rng.randint(0, 4), 0.5, "x")
            for _ in range(30)]
    spec = SEQUENCES["join"]
    plain = workload([spec], seq_ties="allow")
    wl = workload([spec | {"timed_out": True}], seq_ties="allow")
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", 0.5, seed=1))
    job = job_from_json(job_data(wl, plan))
    assert sharing_plan(job).uses, "no subtree was shared"
    events = frame(rows)
    expected = sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                      for m in timed_out_matches(plain, "p", events))
    for share in (True, False):
        assert found(run_local(events, job, share=share)) == expected, share


@pytest.mark.parametrize("seed", range(6))
def test_a_pattern_above_sees_only_the_matches(seed):
    """A pattern binding one with `timed_out` (a hierarchy) gets its complete matches as
    events, never its timed-out partial matches: the reference's matches, with and without."""

    from tests.engine.reference_matcher import reference_matches

    low = {"name": "low", "structure": ["SEQ", "a:A", "b:B"], "where": ["a.v < b.v"],
           "within": 3, "emit": {"s": "a.v + b.v"}}
    high = {"name": "high", "structure": ["SEQ", "p:low", "c:C"], "where": ["c.v < p.s"],
            "within": 4}
    rng = random.Random(seed)
    events = frame([(rng.choice(TYPES), rng.randint(0, 12), rng.randint(0, 4), 0.5, "x")
                    for _ in range(25)])
    wl = workload([low | {"timed_out": True}, high])
    result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
    expected = reference_matches(workload([low, high]), events)
    for name in ("low", "high"):
        assert sorted(map(canonical, result.matches[name])) == \
            sorted(map(canonical, expected[name])), name


def test_workers_write_the_reference_timed_out_matches(tmp_path):
    """`--workers 2` (many small byte ranges): the same files and counts as one worker, the
    reference's matches under OUT/matches/ and its timed-out partial matches under
    OUT/timed_out/, never mixed."""

    from cepplan.stats.synth_write import write_events
    from tests.engine.test_local_workers import _run, _same_runs

    rng = random.Random(7)
    rows = sorted([(rng.choice(TYPES), rng.randint(0, 150), rng.randint(0, 4), 0.5,
                    rng.choice("xyz")) for _ in range(300)], key=lambda r: r[1])
    spec = SEQUENCES["keyed"]
    wl = workload([spec | {"timed_out": True}], csv=True)
    events = frame(rows)
    path = tmp_path / "events.csv"
    write_events(events, wl, path)
    data = job_data(wl, trivial_plan(wl))
    one = _same_runs(data, [str(path)], tmp_path, (2,))
    assert _run(data, [str(path)], tmp_path / "again", 2)["timed_out"] == one["timed_out"]
    plain = workload([spec])
    expected = timed_out_matches(plain, "p", events)
    full = run_local(events, job_from_json(job_data(plain, trivial_plan(plain))))
    want = sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m)) for m in expected)
    for out in ("w1", "w2", "again"):
        assert written(tmp_path / out) == ({"p": sorted(map(canonical, full.matches["p"]))},
                                           want), out
    assert sum(one["timed_out"]["p"].values()) == len(expected) > 20



def followed_run(tmp_path: Path) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """A keyed pattern with `timed_out` planned into tmp_path/plan.json, its events run as a
    batch into tmp_path/batch: (the events, their CSV cut into 8 files (name, text))."""
    from itertools import pairwise

    from cepplan.stats.synth_write import write_events
    from tests.engine.workloads import CSV_SOURCE
    from tests.in_process import cepplan

    rng = random.Random(11)
    rows = sorted([(rng.choice(TYPES), rng.randint(0, 120), rng.randint(0, 4), 0.5,
                    rng.choice("xy")) for _ in range(240)], key=lambda r: r[1])
    spec = SEQUENCES["keyed"] | {"timed_out": True}
    raw = {"format": "cepplan.workload/1", "time_unit": "s", "source": CSV_SOURCE,
           "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                           for t in TYPES},
           "patterns": [spec], "statistics": {"rates": {"A": 1, "B": 1, "C": 1}}}
    (tmp_path / "workload.json").write_text(json.dumps(raw))
    events = frame(rows)
    write_events(events, workload([spec], csv=True), tmp_path / "events.csv")
    assert cepplan("optimize", "workload.json", "-o", "plan.json", "-q",
                   cwd=tmp_path).returncode == 0
    batch = cepplan("run", "plan.json", "events.csv", "-o", "batch", "-q", cwd=tmp_path)
    assert batch.returncode == 0, batch.stderr
    header, *lines = (tmp_path / "events.csv").read_text().splitlines(keepends=True)
    cuts = [round(len(lines) * i / 8) for i in range(9)]
    return events, [(f"part-{i}.csv", header + "".join(lines[a:b]))
                    for i, (a, b) in enumerate(pairwise(cuts))]


def drop(source: Path, name: str, text: str) -> None:
    """A complete file appears in the followed directory (written hidden, then renamed)."""
    (source / f".{name}").write_text(text)
    (source / f".{name}").rename(source / name)


def reference_timed_out(events: pd.DataFrame) -> list[tuple]:
    """The reference's timed-out partial matches of `followed_run`'s pattern over `events`,
    as `written` gives them."""
    return sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                  for m in timed_out_matches(workload([SEQUENCES["keyed"]]), "p", events))


def test_follow_killed_and_restarted_writes_each_line_once(tmp_path):
    """`cepplan run --follow` with a checkpoint over 8 files, killed (SIGKILL) at 2 seeded
    points and restarted each time: OUT/matches/ and OUT/timed_out/ end as the batch run's
    (line for line, none missing, none twice), the timed-out partial matches the reference's
    and none among the matches."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from collections import Counter

    from cepplan.engine_adapter.local.checkpoint import recorded_files

    events, files = followed_run(tmp_path)
    source = tmp_path / "in"
    source.mkdir()
    args = [sys.executable, "-m", "cepplan", "run", str(tmp_path / "plan.json"), "--follow",
            str(source), "-o", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ckpt"),
            "-q", "--trigger", "0.02"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    rng, dropped = random.Random(3), 0
    for kill_after in (3, 6):
        follow = subprocess.Popen(args, env=env, stderr=subprocess.PIPE)
        try:
            while dropped < kill_after:
                drop(source, *files[dropped])
                dropped += 1
            wanted = kill_after - rng.randint(0, 1)  # a kill may land inside a micro-batch
            deadline = time.monotonic() + 90
            while len(recorded_files(tmp_path / "ckpt")) < wanted and follow.poll() is None:
                assert time.monotonic() < deadline, "the stream did not read its files"
                time.sleep(0.01)
            assert follow.poll() is None, follow.stderr.read().decode()
        finally:
            follow.send_signal(signal.SIGKILL)
            follow.wait()
    for name, text in files[dropped:]:
        drop(source, name, text)
    (source / "_END").touch()
    done = subprocess.run(args, env=env, capture_output=True, timeout=90)
    assert done.returncode == 0, done.stderr.decode()
    for folder in ("matches", "timed_out"):
        assert Counter((tmp_path / "out" / folder / "part-00000.jsonl").read_text()
                       .splitlines()) == Counter((tmp_path / "batch" / folder /
                                                  "part-00000.jsonl").read_text().splitlines())
    complete, timed = written(tmp_path / "out")
    assert timed == reference_timed_out(events)
    assert len(timed) > 20 and complete.get("p")


@pytest.mark.parametrize("case", ["shared", "hierarchy"])
def test_run_files_of_a_shared_plan_and_a_hierarchy(tmp_path, case):
    """`run_local_job`'s files with a plan sharing the hidden patterns' subtrees, and with a
    pattern binding the one with `timed_out`: each pattern's complete matches under
    OUT/matches/ (the reference's), the timed-out partial matches under OUT/timed_out/."""
    from cepplan.engine_adapter.local.engine import run_local_job
    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
    from cepplan.planner.evaluation import EvaluationSettings, evaluation
    from cepplan.stats.synth_write import write_events
    from tests.engine.reference_matcher import reference_matches

    rng = random.Random(4)
    events = frame([(rng.choice(TYPES), rng.randint(0, 30), rng.randint(0, 4), 0.5, "x")
                    for _ in range(60)])
    if case == "shared":
        specs, name = [SEQUENCES["join"]], "p"
    else:
        specs, name = [{"name": "low", "structure": ["SEQ", "a:A", "b:B"],
                        "where": ["a.v < b.v"], "within": 3, "emit": {"s": "a.v + b.v"}},
                       {"name": "high", "structure": ["SEQ", "x:low", "c:C"],
                        "where": ["c.v < x.s"], "within": 4}], "low"
    plain = workload(specs, seq_ties="allow", csv=True)
    wl = workload([s | {"timed_out": True} if s["name"] == name else s for s in specs],
                  seq_ties="allow", csv=True)
    plan = trivial_plan(wl)
    if case == "shared":
        plan = evaluation(wl, wl.statistics, plan, EvaluationSettings("tabu", "edge", 0.5,
                                                                      seed=1))
        assert sharing_plan(job_from_json(job_data(wl, plan))).uses, "nothing shared"
    write_events(events, wl, tmp_path / "events.csv")
    run_local_job(job_data(wl, plan), [str(tmp_path / "events.csv")], tmp_path / "out",
                  say=lambda _text: None)
    expected = reference_matches(plain, events)
    complete, timed = written(tmp_path / "out")
    assert complete == {n: sorted(map(canonical, ms)) for n, ms in expected.items() if ms}
    assert timed == sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                           for m in timed_out_matches(plain, name, events))
    assert timed
