"""`cepplan run --engine spark` (a real spark-submit of the generated job) computes the
consumer queries: on examples/mobile its results are byte-identical to `--engine local`'s and
metrics.json's `covering` is the same but for solver timings; no warning is printed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cepplan.cli.app import app
from tests.contexts.test_spark_contexts import written_matches as _written

MOBILE = Path(__file__).resolve().parents[2] / "examples" / "mobile"
TIMINGS = ("seconds_total", "seconds_max")


def _covering(out: Path) -> dict:
    section = json.loads((out / "metrics.json").read_text())["covering"]
    return {**section, "solver": {k: v for k, v in section["solver"].items()
                                  if k not in TIMINGS}}


def test_spark_engine_gives_the_local_consumer_query_results(tmp_path):
    runner = CliRunner()
    plan = tmp_path / "plan.json"
    made = runner.invoke(app, ["optimize", str(MOBILE / "workload.json"), "-o", str(plan),
                               "--quiet"])
    assert made.exit_code == 0, made.output
    outputs = {}
    for engine in ("local", "spark"):
        outputs[engine] = tmp_path / engine
        done = runner.invoke(app, ["run", str(plan), str(MOBILE / "events.jsonl"), "-o",
                                   str(outputs[engine]), "--engine", engine, "--quiet"])
        assert done.exit_code == 0, done.output
        assert not [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    local, spark = outputs["local"], outputs["spark"]
    results = (local / "results" / "part-00000.jsonl").read_bytes()
    assert results == (spark / "results" / "part-00000.jsonl").read_bytes()
    assert len(results.splitlines()) == 1500
    assert _covering(spark) == _covering(local)
    assert _covering(local)["executions_with_reuse"] < _covering(local)["selections"]
    assert _written(spark) == _written(local)
