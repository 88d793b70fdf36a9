"""The end (and start) of the input: a match whose NOT reaches past the events given is held
back, counted and warned of — by the runtime as by the reference, on both engines — and what a
run leaves out (Kleene cap cuts, held matches) is a warning that survives -q."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.workload import build_workload
from tests.engine.reference_matcher import canonical, reference_run
from tests.engine.test_local_engine import read_matches
from tests.engine.test_matcher_vs_reference import EVENT, frame
from tests.engine.workloads import TEMPLATES, TYPES, workload
from tests.hostile import conftest as hostile

cli = hostile.cli  # the fixture: the real `cepplan` entry point, in-process
NEGATIONS = sorted(t for t in TEMPLATES if t.startswith("not_"))


@pytest.mark.parametrize("template", NEGATIONS)
@settings(max_examples=40)
@given(rows=st.lists(EVENT, max_size=12), chunk=st.integers(1, 6))
def test_held_back_matches_equal_the_reference(template, rows, chunk):
    wl = workload(TEMPLATES[template])
    events = frame(rows)
    result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))), chunk_events=chunk)
    matches, held = reference_run(wl, events)
    assert sorted(map(canonical, result.matches["p"])) == sorted(map(canonical, matches["p"]))
    assert result.held_back["p"] == held["p"]


WORKLOAD = {
    "format": "cepplan.workload/1", "name": "end", "time_unit": "s",
    "source": {"format": "csv", "header": True, "type_column": "type", "time_column": "ts"},
    "event_types": {t: {"attributes": {"v": "long"}} for t in "ABC"},
    "options": {"kleene_cap": 2},
    "patterns": [
        {"name": "abandoned", "structure": ["SEQ", "a:A", "c:C", ["NOT", "x:B"]], "within": 3},
        {"name": "bursts", "structure": ["SEQ", "a:A", ["KLEENE", "k:C"]], "within": 20}],
    "statistics": {"rates": {"A": 1, "B": 1, "C": 1}},
}
# (A 0, C 1) is blocked by B 2; (A 5, C 6) is decided (its window ends at 8, the input at
# 11); (A 10, C 11) is held back: its window runs to 13, past the last event. bursts: A 0
# with C 1, 6, 11 (within 20) has 3 C events, one more than the cap of 2: one cut.
EVENTS = "type,ts,v\nA,0,1\nC,1,1\nB,2,1\nA,5,1\nC,6,1\nA,10,1\nC,11,1\nD,12,1\n"


def run_end_case(tmp_path: Path, cli, engine: str) -> tuple[str, dict, Path]:
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    (tmp_path / "e.csv").write_text(EVENTS)
    planned = cli("optimize", tmp_path / "w.json", "-o", tmp_path / "p.json", "-q")
    assert planned.code == 0, planned.err
    out = tmp_path / "out"
    ran = cli("run", tmp_path / "p.json", tmp_path / "e.csv", "-o", out, "--engine", engine,
              "-q")
    assert ran.code == 0, ran.err
    assert ran.out == ""
    return ran.err, json.loads((out / "metrics.json").read_text()), out


def abandoned_matches(out: Path) -> list[tuple[float, float]]:
    found = []
    for path in sorted((out / "matches").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            match = json.loads(line)
            if match["pattern"] == "abandoned":
                found.append((match["events"]["a"]["ts"], match["events"]["c"]["ts"]))
    return found


def check_end_case(err: str, metrics: dict, out: Path) -> None:
    assert abandoned_matches(out) == [(5.0, 6.0)]
    assert metrics["negation_held_back"]["abandoned"] == 1
    assert metrics["input_span"] == [0.0, 11.0]
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert any("abandoned" in w and "1 match(es) held back" in w and "ts 0 to ts 11" in w
               for w in warnings), err
    assert any("bursts" in w and "1 time(s) a Kleene variable had more than kleene_cap=2" in w
               and "raise options.kleene_cap" in w for w in warnings), err
    assert not any("rejected" in w for w in warnings), err  # the D row is only not used


def test_local_run_holds_back_and_warns_under_quiet(tmp_path, cli):
    check_end_case(*run_end_case(tmp_path, cli, "local"))


def test_spark_run_holds_back_and_warns_under_quiet(tmp_path, cli):
    check_end_case(*run_end_case(tmp_path, cli, "spark"))


def test_compare_warns_once_of_what_its_runs_left_out(tmp_path, cli):
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    (tmp_path / "e.csv").write_text(EVENTS)
    done = cli("compare", tmp_path / "w.json", "--events", tmp_path / "e.csv", "-o",
               tmp_path / "report.html", "--time-limit", "2", "-q")
    assert done.code == 0, done.err
    warnings = [line for line in done.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, done.err  # each plan run cut and held the same: said once
    assert "1 match(es) held back" in warnings[1] and "kleene_cap=2" in warnings[0]


@pytest.mark.parametrize("by_range", [True, False])
def test_engine_paths_hold_back_what_the_reference_holds_back(tmp_path, monkeypatch, by_range):
    """The in-process engine, matched in many small time ranges as read or over the whole
    pool, on a random stream: the reference's matches and held-back counts, every NOT
    position (start, middle, end, AND) in one job."""
    from tests.engine.test_local_time_ranges import _run

    patterns = [{**pattern, "name": template} for template in NEGATIONS
                for pattern in TEMPLATES[template]]
    wl = build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "type"},
        "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                        for t in TYPES},
        "patterns": patterns})
    rng = random.Random(7)
    rows, ts = [], 0.0
    for _ in range(300):
        ts += rng.choice([0.0, 0.5, 1.0])
        rows.append((rng.choice(TYPES), ts, rng.randint(0, 4), rng.choice([0.5, 2.0, 3.5]),
                     rng.choice(["x", "y"])))
    events = frame(rows)
    path = tmp_path / "events.csv"
    path.write_text("type,ts,v,w,k\n" + "".join(",".join(map(str, row)) + "\n"
                                                 for row in rows))
    data = job_data(wl, trivial_plan(wl))
    metrics = _run(data, [str(path)], tmp_path / "out", monkeypatch, by_range=by_range)
    matches, held = reference_run(wl, events)
    got = read_matches(tmp_path / "out")
    assert {name: got.get(name, []) for name in matches} == {
        name: sorted(map(canonical, found)) for name, found in matches.items()}
    assert metrics["negation_held_back"] == held
    assert held["not_end"] and held["not_start"] and held["not_and"] and not held["not_middle"]
