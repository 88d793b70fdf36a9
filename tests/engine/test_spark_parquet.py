"""`--format parquet` on Spark: the same typed rows as in-process (docs/engine.md, "Matches as
Parquet"), both ways the Spark job writes them — by the match groups themselves (a local
master) and by Spark's writer from the match texts (a cluster, or contexts) — each checked
against the in-process engine's Parquet and its JSON lines, parsed (`parquet_reference`)."""

from __future__ import annotations

import json

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.spark import job as spark_job
from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.workload import load_workload
from tests.engine.parquet_reference import expected_rows, json_matches, parquet_rows
from tests.engine.test_parquet_matches import WORKLOAD, typed_events, zoned_events


def test_spark_writes_the_rows_of_the_local_engine(spark, tmp_path, monkeypatch):
    """A pattern over another's matches (the shuffle plan), Kleene lists, an OR, a
    negation, emitted attributes and time texts: every row equal in-process and on Spark."""
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    texts = typed_events(tmp_path / "e.csv", 400, seed=5)
    workload = load_workload(tmp_path / "w.json")
    data = job_data(workload, optimize(workload, workload.statistics, Settings()).plan)
    events = [str(tmp_path / "e.csv")]
    quiet = {"say": lambda _: None}
    run_local_job(data, events, tmp_path / "jsonl", **quiet)
    run_local_job(data, events, tmp_path / "local", output_format="parquet", **quiet)
    local = parquet_rows(tmp_path / "local", workload)
    assert local == expected_rows(workload, json_matches(tmp_path / "jsonl"), texts)
    assert all(local.values())
    direct = spark_job.run_job(spark, data, events, str(tmp_path / "direct"),
                               output_format="parquet", **quiet)
    assert direct["spark_plan"] == "shuffle"
    assert parquet_rows(tmp_path / "direct", workload) == local
    # off a local master the tasks cannot write the driver's files: Spark's writer writes
    monkeypatch.setattr(spark_job, "_direct_directory", lambda *_: None)
    spark_job.run_job(spark, data, events, str(tmp_path / "writer"), output_format="parquet",
                      **quiet)
    assert parquet_rows(tmp_path / "writer", workload) == local


def test_spark_writes_times_in_their_own_offset(spark, tmp_path):
    """Times written with zone offsets that change within the file: the match groups (a local
    master reading the CSV itself) write each time in its own offset, as in-process."""
    raw = json.loads(json.dumps(WORKLOAD))
    raw["source"]["time_format"] = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
    (tmp_path / "w.json").write_text(json.dumps(raw))
    texts = zoned_events(tmp_path / "e.csv", 300, 7, "XXX")
    workload = load_workload(tmp_path / "w.json")
    data = job_data(workload, optimize(workload, workload.statistics, Settings()).plan)
    events = [str(tmp_path / "e.csv")]
    quiet = {"say": lambda _: None}
    run_local_job(data, events, tmp_path / "jsonl", **quiet)
    expected = expected_rows(workload, json_matches(tmp_path / "jsonl"), texts)
    assert all(expected.values())
    spark_job.run_job(spark, data, events, str(tmp_path / "direct"), output_format="parquet",
                      **quiet)
    assert parquet_rows(tmp_path / "direct", workload) == expected
