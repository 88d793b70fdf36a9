"""The Spark job (on the session's local Spark) against the reference matcher, on the bundled
examples, with the trivial plan and a many-step plan (plans change cost, never results)."""

from __future__ import annotations

import json

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark_job import run_job
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.example_data import stepwise_plan, thin_example
from tests.engine.reference_matcher import canonical, reference_matches


@pytest.mark.parametrize("example", ["stocks", "network"])
def test_spark_job_equals_reference(spark, tmp_path, example):
    workload, events = thin_example(example)
    path = tmp_path / f"events.{workload.source.format}"
    write_events(events, workload, path)
    expected = {name: sorted(map(canonical, found))
                for name, found in reference_matches(workload, events).items()}
    assert sum(map(len, expected.values())) > 0
    sent = {}
    for kind, plan in (("trivial", trivial_plan(workload)), ("steps", stepwise_plan(workload))):
        out = tmp_path / kind
        metrics = run_job(spark, job_data(workload, plan), [str(path)], str(out),
                          say=lambda _: None)
        lines = [line for part in sorted((out / "matches").glob("part-*"))
                 for line in part.read_text().splitlines()]
        got: dict[str, list] = {name: [] for name in expected}
        for line in lines:
            obj = json.loads(line)
            got[obj["pattern"]].append(canonical(obj))
        assert {k: sorted(v) for k, v in got.items()} == expected, kind
        assert metrics["rows_read"] == len(events)
        assert metrics["matches"] == {k: len(v) for k, v in expected.items()}
        sent[kind] = metrics["rows_to_matchers"]
    assert sent["steps"] <= sent["trivial"]
