"""The Spark job (on the session's local Spark) against the reference matcher, on the bundled
examples, with the trivial plan and a many-step plan (plans change cost, never results)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from cepplan.workload import Workload
from tests.engine import workloads
from tests.engine.example_data import example_reference, stepwise_plan
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import TEMPLATES, TYPES


def read_matches(out: Path) -> dict[str, list]:
    """The canonical matches per pattern in every part file under `out/matches`."""
    got: dict[str, list] = {}
    for part in sorted((out / "matches").glob("part-*")):
        for line in part.read_text().splitlines():
            obj = json.loads(line)
            got.setdefault(obj["pattern"], []).append(canonical(obj))
    return {k: sorted(v) for k, v in got.items()}


@pytest.mark.parametrize("example", ["stocks", "network"])
def test_spark_job_equals_reference(spark, tmp_path, example):
    workload, events, expected = example_reference(example)
    path = tmp_path / f"events.{workload.source.format}"
    write_events(events, workload, path)
    assert sum(map(len, expected.values())) > 0
    sent = {}
    for kind, plan in (("trivial", trivial_plan(workload)), ("steps", stepwise_plan(workload))):
        out = tmp_path / kind
        metrics = run_job(spark, job_data(workload, plan), [str(path)], str(out),
                          say=lambda _: None)
        got = read_matches(out)
        assert {k: got.get(k, []) for k in expected} == expected, kind
        assert metrics["rows_read"] == len(events)
        assert metrics["matches"] == {k: len(v) for k, v in expected.items()}
        sent[kind] = metrics["rows_to_matchers"]
    assert sent["steps"] <= sent["trivial"]


def property_workload() -> Workload:
    """Every template of the property tests in one workload (each pattern renamed after its
    template; `hierarchy` keeps its two patterns), read from a CSV file."""
    patterns = []
    for name, template in sorted(TEMPLATES.items()):
        patterns += [p if name == "hierarchy" else {**p, "name": name} for p in template]
    return workloads.workload(patterns, kleene_cap=30, csv=True)


@pytest.mark.parametrize("seed", [1])
def test_one_pass_equals_reference_on_property_workloads(spark, tmp_path, seed):
    """All property-test patterns in one job (one read, shared acquisition rounds, one shuffle
    per partition scheme) equal the reference, under the trivial and a many-step plan."""
    rng = random.Random(seed)
    rows = [(rng.choice(TYPES), rng.randint(0, 12), rng.randint(0, 4),
             rng.choice([0.5, 2.0, 3.5, 5.0]), rng.choice("xy")) for _ in range(40)]
    workload, events = property_workload(), frame(rows)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    expected = {name: sorted(map(canonical, found))
                for name, found in reference_matches(workload, events).items()}
    assert sum(1 for found in expected.values() if found) >= len(expected) // 2
    for metrics in plans_equal_expected(spark, workload, path, expected, tmp_path):
        assert metrics["engine"] == "spark"
        assert not any(metrics["kleene_cap_hits"].values())


def plans_equal_expected(spark, workload: Workload, path: Path, expected: dict,
                         tmp_path: Path) -> list[dict]:
    """Run the job on `path` under the trivial and a many-step plan, check that each finds the
    `expected` canonical matches per pattern, and return their metrics."""
    out = []
    for kind, plan in (("trivial", trivial_plan(workload)), ("steps", stepwise_plan(workload))):
        metrics = run_job(spark, job_data(workload, plan), [str(path)], str(tmp_path / kind),
                          say=lambda _: None)
        got = read_matches(tmp_path / kind)
        assert {k: got.get(k, []) for k in expected} == expected, kind
        assert metrics["matches"] == {k: len(v) for k, v in expected.items()}, kind
        out.append(metrics)
    return out
