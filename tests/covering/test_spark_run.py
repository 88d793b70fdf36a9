"""`cepplan run --engine spark` (a real spark-submit of the generated job) computes the
consumer queries: on examples/mobile its results are byte-identical to `--engine local`'s and
metrics.json's `covering` is the same but for solver timings; no warning is printed. The same
run shows that `--driver-memory` reaches the Spark driver (docs/cli.md), so that no other test
starts a JVM for it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepplan.cli.app import app
from tests.contexts.test_spark_contexts import written_matches as _written

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

MOBILE = Path(__file__).resolve().parents[2] / "examples" / "mobile"
TIMINGS = ("seconds_total", "seconds_max")


def _covering(out: Path) -> dict:
    section = json.loads((out / "metrics.json").read_text())["covering"]
    return {**section, "solver": {k: v for k, v in section["solver"].items()
                                  if k not in TIMINGS}}


def driver_storage_mib(log: str) -> float:
    """The Spark driver's block store, from its log (`-v`): Spark's unified memory sizes it at
    0.6 of the heap above 300 MiB, so under `--driver-memory 1g` it is well below the 4g
    default's (about 2.2 GiB)."""
    capacity = re.search(r"MemoryStore started with capacity ([\d.]+) (MiB|GiB)", log)
    assert capacity, log[-3000:]
    return float(capacity[1]) * (1024 if capacity[2] == "GiB" else 1)


def test_spark_engine_gives_the_local_consumer_query_results(tmp_path):
    runner = CliRunner()
    plan = tmp_path / "plan.json"
    made = runner.invoke(app, ["optimize", str(MOBILE / "workload.json"), "-o", str(plan),
                               "--quiet"])
    assert made.exit_code == 0, made.output
    outputs, stderr = {}, {}
    options = {"local": ["--quiet"], "spark": ["--driver-memory", "1g", "-v"]}
    for engine in ("local", "spark"):
        outputs[engine] = tmp_path / engine
        done = runner.invoke(app, ["run", str(plan), str(MOBILE / "events.jsonl"), "-o",
                                   str(outputs[engine]), "--engine", engine, *options[engine]])
        assert done.exit_code == 0, done.output
        assert not [line for line in done.stderr.splitlines() if line.startswith("warning:")]
        stderr[engine] = done.stderr
    assert 0.5 * (1024 - 300) * 0.6 < driver_storage_mib(stderr["spark"]) < 1024 * 0.6
    local, spark = outputs["local"], outputs["spark"]
    results = (local / "results" / "part-00000.jsonl").read_bytes()
    assert results == (spark / "results" / "part-00000.jsonl").read_bytes()
    assert len(results.splitlines()) == 1500
    assert _covering(spark) == _covering(local)
    assert _covering(local)["executions_with_reuse"] < _covering(local)["selections"]
    assert _written(spark) == _written(local)
