"""`--format parquet` on Spark: the same typed rows as in-process (docs/engine.md, "Matches as
Parquet"), both ways the Spark job writes them — by the match groups themselves (a local
master) and by Spark's writer from the match texts (a cluster, or contexts) — each checked
against the in-process engine's Parquet and its JSON lines, parsed (`parquet_reference`)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import pandas as pd
import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.spark import job as spark_job
from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.sources.time_format import parse_times
from cepplan.sources.time_text import offset_text
from cepplan.workload import load_workload
from tests.engine.parquet_reference import expected_rows, json_matches, parquet_rows
from tests.engine.test_parquet_matches import (
    EXAMPLES,
    OFFSETS,
    START,
    WORKLOAD,
    typed_events,
    zoned_events,
)


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


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_spark_reader_writes_times_in_their_own_offset(spark, tmp_path, monkeypatch, fmt):
    """The same zoned times as JSON lines and as Parquet text read by Spark's own reader:
    each time in its own offset, as in-process (formerly UTC), written by the match groups
    (a local master) and by Spark's writer (off a local master)."""
    raw = json.loads(json.dumps(WORKLOAD))
    raw["source"] = {**raw["source"], "format": fmt,
                     "time_format": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"}
    raw["source"].pop("header")
    (tmp_path / "w.json").write_text(json.dumps(raw))
    texts = zoned_events(tmp_path / "e.csv", 300, 8, "XXX")
    frame = pd.read_csv(tmp_path / "e.csv", dtype=str, keep_default_na=False)
    path = tmp_path / f"e.{fmt}"
    if fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    workload = load_workload(tmp_path / "w.json")
    data = job_data(workload, optimize(workload, workload.statistics, Settings()).plan)
    quiet = {"say": lambda _: None}
    run_local_job(data, [str(path)], tmp_path / "jsonl", **quiet)
    expected = expected_rows(workload, json_matches(tmp_path / "jsonl"), texts)
    assert all(expected.values())
    spark_job.run_job(spark, data, [str(path)], str(tmp_path / "direct"),
                      output_format="parquet", **quiet)
    assert parquet_rows(tmp_path / "direct", workload) == expected
    monkeypatch.setattr(spark_job, "_direct_directory", lambda *_: None)
    spark_job.run_job(spark, data, [str(path)], str(tmp_path / "writer"),
                      output_format="parquet", **quiet)
    assert parquet_rows(tmp_path / "writer", workload) == expected


def test_spark_context_stage_writes_times_in_their_own_offset(spark, tmp_path):
    """The traffic example (contexts: Spark's reader, matches made Parquet rows by Spark's
    writer after the context stage) with its times written in changing zone offsets: each
    time in its own offset, as in-process (formerly UTC)."""
    folder = tmp_path / "traffic"
    shutil.copytree(EXAMPLES / "traffic", folder)
    raw = json.loads((folder / "workload.json").read_text())
    raw["source"]["time_format"] = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
    (folder / "workload.json").write_text(json.dumps(raw))
    frame = pd.read_csv(folder / "events.csv")
    spelled = []
    for millis in (frame["sec"] * 1000).round().astype("int64") + int(START) * 1000:
        offset = OFFSETS[int(millis // 1000) % len(OFFSETS)]
        local = datetime.fromtimestamp(millis // 1000 + offset, UTC)
        spelled.append(f"{local:%Y-%m-%dT%H:%M:%S}.{millis % 1000:03d}"
                       + offset_text("XXX", offset))
    texts = dict(zip(parse_times(spelled, raw["source"]["time_format"], "s").tolist(),
                     spelled, strict=True))
    frame.assign(sec=spelled).to_csv(folder / "events.csv", index=False)
    workload = load_workload(folder / "workload.json")
    data = job_data(workload, optimize(workload, workload.statistics, Settings()).plan)
    events = [str(folder / "events.csv")]
    quiet = {"say": lambda _: None}
    run_local_job(data, events, tmp_path / "jsonl", **quiet)
    matches = json_matches(tmp_path / "jsonl")
    assert sum(map(len, matches.values())) > 50
    expected = expected_rows(workload, matches, texts)
    assert any(t.endswith("+05:45") for t in texts.values())
    spark_job.run_job(spark, data, events, str(tmp_path / "spark"), output_format="parquet",
                      **quiet)
    assert parquet_rows(tmp_path / "spark", workload) == expected
