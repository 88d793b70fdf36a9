"""The Spark job running the shared plan (on the session's local Spark): matches equal to the
Spark job without sharing, to the local engine and to the brute-force reference; metrics.json's
`shared_nodes` equal to the local engine's."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.engine_adapter.spark.job import run_job
from cepplan.engine_adapter.spark.shared import shared_metrics
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.search.synthetic import synthetic_workload
from cepplan.stats.synth_write import write_events
from cepplan.workload.loader import build_workload, load_workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_shared_plan import _events
from tests.engine.test_spark_job import read_matches

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trading_rules"


def _shared_data(wl) -> dict:
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", 0.5, seed=1))
    return job_data(wl, plan)


def _three_runs(spark, wl, data: dict, path: Path, tmp: Path, monkeypatch):
    """Spark shared (range-local and shuffled), Spark unshared, local shared: their matches
    and metrics."""
    alone = {k: v for k, v in data.items() if k != "sharing"}
    runs = {}
    for name, job, ranges in (("spark shared", data, "1"), ("spark shuffled", data, "0"),
                              ("spark alone", alone, "1")):
        monkeypatch.setenv("CEPPLAN_SPARK_RANGES", ranges)
        metrics = run_job(spark, job, [str(path)], str(tmp / name), say=lambda _: None)
        runs[name] = (read_matches(tmp / name), metrics)
    assert runs["spark shared"][1]["spark_plan"] == "range-local"
    assert runs["spark shuffled"][1]["spark_plan"] == "shuffle"
    metrics = run_local_job(data, [str(path)], tmp / "local", say=lambda _: None)
    runs["local"] = (read_matches(tmp / "local"), metrics)
    return runs


def canonical_json(value) -> str:
    """A value as sorted JSON text, to compare several at once."""
    return json.dumps(value, sort_keys=True)


def _assert_same(runs) -> None:
    matches = {name: found for name, (found, _) in runs.items()}
    assert len({canonical_json(found) for found in matches.values()}) == 1
    assert len({canonical_json(metrics["matches"]) for _, metrics in runs.values()}) == 1
    local = runs["local"][1]
    for name in ("spark shared", "spark shuffled"):
        assert runs[name][1]["shared_nodes"] == local["shared_nodes"]
        assert (runs[name][1]["rows_to_matchers_by_pattern"]
                == local["rows_to_matchers_by_pattern"])
    assert "shared_nodes" not in runs["spark alone"][1]


def test_trading_rules_on_spark_share_like_the_local_engine(spark, tmp_path, monkeypatch):
    wl = load_workload(EXAMPLE / "workload.json")
    csv = pd.read_csv(EXAMPLE / "events.csv")
    path = tmp_path / "events.csv"
    csv[csv["ts"] < 40].to_csv(path, index=False)
    data = _shared_data(wl)
    assert len(sharing_plan(job_from_json(data)).groups()) >= 5
    runs = _three_runs(spark, wl, data, path, tmp_path, monkeypatch)
    _assert_same(runs)
    nodes = runs["spark shared"][1]["shared_nodes"]
    assert sum(n["partial_matches"] for n in nodes) > 0
    assert sum(runs["local"][1]["matches"].values()) > 1000


def test_random_workload_on_spark_shares_and_matches_the_reference(spark, tmp_path,
                                                                   monkeypatch):
    wl = build_workload(synthetic_workload(10, avg_size=3.0, n_types=5, seed=0, window_s=3,
                                           max_size=4))
    data = _shared_data(wl)
    assert sharing_plan(job_from_json(data)).uses
    events = _events([f"T{i:02d}" for i in range(5)], 70, 0, 25.0)
    path = tmp_path / "events.csv"
    write_events(events, wl, path)
    runs = _three_runs(spark, wl, data, path, tmp_path, monkeypatch)
    _assert_same(runs)
    expected = {p: sorted(map(canonical, m)) for p, m in reference_matches(wl, events).items()}
    assert sum(map(len, expected.values())) > 0
    got = runs["spark shared"][0]
    assert {p: got.get(p, []) for p in expected} == expected


def test_users_with_another_key_run_alone_and_metrics_say_why():
    """A hand-edited plan naming a user whose key differs: evaluated alone, said in metrics."""
    wl = load_workload(EXAMPLE / "workload.json")
    data = _shared_data(wl)
    entry = next(e for e in data["sharing"]["shared"] if len(e["users"]) == 2)
    other = copy.deepcopy(data)
    name = next(iter(entry["users"]))
    spec = next(p for p in other["patterns"] if p["name"] == name)
    spec["partition_by"] = ["price"]
    assert name in {u for n in shared_metrics({}, data)["shared_nodes"] for u in n["users"]}
    after = shared_metrics({}, other)
    assert name not in {u for n in after["shared_nodes"] for u in n["users"]}
    assert {"pattern": name, "reason": "its key (partition_by) differs from the other users': "
            "another partition scheme"} in after["sharing_unused"]
