"""The covering stage on a real local Spark reader gives the in-process engine's results."""

from __future__ import annotations

import json

import pandas as pd

from cepplan.engine_adapter.local.covering_io import read_covering_rows
from cepplan.engine_adapter.runtime.covering_run import run_covering
from cepplan.engine_adapter.spark.covering import run_covering_spark
from cepplan.planner.covering_plan import CoveringSettings, covering_section
from cepplan.stats.mobility import MobilitySpec, mobility_workload, simulate_cars
from cepplan.workload import load_workload
from cepplan.workload.spark_source import read_events, valid_rows


def test_spark_and_local_deliver_the_same_results(spark, tmp_path):
    spec = MobilitySpec(cars=40, consumers=10, duration=30.0)
    sim = simulate_cars(spec, seed=5)
    events = tmp_path / "events.jsonl"
    events.write_text(sim.events.to_json(orient="records", lines=True))
    (tmp_path / "workload.json").write_text(json.dumps(mobility_workload(sim, spec)))
    workload = load_workload(tmp_path / "workload.json")
    section = covering_section(workload, workload.statistics, CoveringSettings("mqc"))
    local = run_covering(read_covering_rows([str(events)], workload, section)[0], section)
    source = {"format": "jsonl", "type_column": "kind", "time_column": "t"}
    attributes = {"Speed": dict(workload.event_types["Speed"].attributes)}
    frame = valid_rows(read_events(spark, str(events), source, attributes, "s"))
    remote = run_covering_spark(frame, section)
    columns = ["batch", "query", "window", "value", "served_by", "served_window", "precision",
               "recall", "disparity"]
    pd.testing.assert_frame_equal(local.results[columns], remote.results[columns])
    assert local.metrics["executions_with_reuse"] == remote.metrics["executions_with_reuse"]
    assert local.metrics["executions_with_reuse"] < local.metrics["executions_without_reuse"]
