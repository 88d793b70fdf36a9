"""The in-process engine (`cepplan run`, engine local) runs the context stage: on the traffic
example and on random streams it writes the matches of the context stage's `run_local` and of
the brute-force reference, and metrics.json's `contexts` agrees with the stage's own figures
while its counts stay consistent."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.runtime.contexts import metrics_section
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload
from tests.contexts.context_workloads import frame, write_csv
from tests.contexts.reference_contexts import reference_context_matches
from tests.contexts.test_engine_vs_reference import EAGER, EVENT, WORKLOAD
from tests.engine.reference_matcher import canonical

TRAFFIC = Path(__file__).resolve().parents[2] / "examples" / "traffic"


def _written(out: Path) -> dict[str, list]:
    got: dict[str, list] = {}
    for part in (out / "matches").iterdir():
        for line in part.read_text().splitlines():
            obj = json.loads(line)
            got.setdefault(obj["pattern"], []).append(canonical(obj))
    return {name: sorted(found) for name, found in got.items()}


def _sorted(matches: dict[str, list]) -> dict[str, list]:
    return {name: sorted(map(canonical, found)) for name, found in matches.items() if found}


def _consistent(metrics: dict) -> None:
    assert metrics["rows_to_matchers"] == sum(metrics["rows_to_matchers_by_pattern"].values())
    section = metrics["contexts"]["patterns"]
    assert {n: v["matches"] for n, v in section.items()} == metrics["matches"]


def test_traffic_example_equals_the_context_stage(tmp_path):
    workload = load_workload(TRAFFIC / "workload.json")
    plan = optimize(workload, workload.statistics, Settings()).plan
    data = job_data(workload, plan)
    files = [str(TRAFFIC / "events.csv")]
    metrics = run_local_job(data, files, tmp_path / "out", say=lambda _: None)
    events = pd.concat([b.events for b in read_batches(files, **data["reader"])],
                       ignore_index=True)
    job = job_from_json(data)
    stage = run_local(events, job)
    assert _written(tmp_path / "out") == _sorted(stage.matches)
    assert sum(metrics["matches"].values()) > 100
    _consistent(metrics)
    expected = metrics_section(stage, job)
    got = metrics["contexts"]
    assert got["windows"] == expected["windows"] and sum(got["windows"].values()) > 8
    for name, want in expected["patterns"].items():
        have = got["patterns"][name]
        for key in ("rows_of_its_types", "matches", "expected_active_share", "contexts"):
            assert have[key] == want[key], (name, key)
        assert have["suspended_time_share"] == pytest.approx(want["suspended_time_share"])
    toll = got["patterns"]["toll"]  # congestion only: suspended most of the time, fed little
    assert toll["suspended_time_share"] > 0.3
    assert toll["rows_seen"] < 0.7 * toll["rows_of_its_types"]
    assert metrics["rows_to_matchers_by_pattern"]["toll"] <= toll["rows_seen"]


@settings(max_examples=30)
@given(st.lists(EVENT, min_size=1, max_size=26), st.sampled_from([WORKLOAD, EAGER]))
def test_random_streams_equal_the_context_stage_and_reference(rows, workload):
    events = frame(rows)
    data = job_data(workload, trivial_plan(workload))
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "events.csv"
        write_csv(events, path)
        metrics = run_local_job(data, [str(path)], Path(scratch) / "out", say=lambda _: None)
        written = _written(Path(scratch) / "out")
    assert written == _sorted(run_local(events, job_from_json(data)).matches)
    assert written == _sorted(reference_context_matches(workload, events))
    assert metrics["rows_read"] == len(events)
    _consistent(metrics)
