"""`cepplan run --follow SOURCE --engine spark` and `cepplan generate --streaming` on bad
input: a source that does not exist or that Spark does not follow, a plan a stream cannot
run, a checkpoint of another plan or of no Spark stream, a Parquet source — one error line
each, before any JVM starts (the streaming query itself: tests/engine/test_spark_stream.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import EXAMPLES

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)


@pytest.fixture(scope="module")
def fraud_plan(tmp_path_factory) -> Path:
    from cepplan.planner.plan import trivial_plan
    from cepplan.workload import load_workload

    plan = tmp_path_factory.mktemp("plan") / "plan.json"
    plan.write_text(json.dumps(
        trivial_plan(load_workload(EXAMPLES / "fraud" / "workload.json")).to_json()))
    return plan


def _follow(cli, plan: Path, source: object, out: Path, *extra: object):
    return cli("run", plan, "--follow", source, "-o", out, "--engine", "spark", "-q", *extra)


def test_missing_source_directory(cli, fraud_plan, tmp_path):
    _follow(cli, fraud_plan, tmp_path / "nowhere", tmp_path / "out").one_error(
        "nowhere", "no such directory to follow")


def test_source_is_a_file(cli, fraud_plan, tmp_path):
    _follow(cli, fraud_plan, EXAMPLES / "fraud" / "events.csv", tmp_path / "out").one_error(
        "events.csv", "not a directory")


def test_standard_input_on_spark(cli, fraud_plan, tmp_path):
    _follow(cli, fraud_plan, "-", tmp_path / "out").one_error(
        "--follow", "directory or tcp://")


def test_bad_tcp_address(cli, fraud_plan, tmp_path):
    _follow(cli, fraud_plan, "tcp://nowhere", tmp_path / "out").one_error(
        "tcp://nowhere", "tcp://HOST:PORT")


def test_checkpoint_of_another_plan(cli, fraud_plan, tmp_path):
    """A checkpoint claimed by a stream of another job is refused, and left as it was."""
    (tmp_path / "in").mkdir()
    (tmp_path / "ck").mkdir()
    claim = json.dumps({"job": "0" * 64, "source": str(tmp_path / "in"),
                        "output": str(tmp_path / "out")})
    (tmp_path / "ck" / "cepplan-stream.json").write_text(claim)
    _follow(cli, fraud_plan, tmp_path / "in", tmp_path / "out", "--checkpoint",
            tmp_path / "ck").one_error("ck", "another plan or workload")
    assert (tmp_path / "ck" / "cepplan-stream.json").read_text() == claim


def test_checkpoint_of_no_spark_stream(cli, fraud_plan, tmp_path):
    """An in-process stream's checkpoint (or any other files) is not a Spark stream's."""
    (tmp_path / "in").mkdir()
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "checkpoint.arrow").write_bytes(b"ARROW1")
    _follow(cli, fraud_plan, tmp_path / "in", tmp_path / "out", "--checkpoint",
            tmp_path / "ck").one_error("ck", "no checkpoint of a stream on Spark")


def test_parquet_source(cli, fraud, tmp_path):
    raw = json.loads((fraud / "workload.json").read_text())
    raw["source"]["format"] = "parquet"
    (fraud / "workload.json").write_text(json.dumps(raw))
    plan = tmp_path / "plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "-q").code == 0
    (tmp_path / "in").mkdir()
    _follow(cli, plan, tmp_path / "in", tmp_path / "out").one_error("CSV or JSON lines")


def test_generate_streaming_for_a_plan_a_stream_cannot_run(cli, tmp_path):
    """A pattern reading another's matches (network's hierarchy): refused, nothing written."""
    plan = tmp_path / "plan.json"
    assert cli("optimize", EXAMPLES / "network" / "workload.json", "-o", plan, "-q").code == 0
    cli("generate", plan, "--streaming", "-o", tmp_path / "job", "-q").one_error(
        "plan.json", "--follow runs plans")
    assert not (tmp_path / "job").exists()


def test_generate_streaming_writes_the_stream_job(cli, fraud_plan, tmp_path):
    assert cli("generate", fraud_plan, "--streaming", "-o", tmp_path / "job", "-q").code == 0
    assert "stream_job import main" in (tmp_path / "job" / "job.py").read_text()


@pytest.mark.case_seconds(180)
def test_generated_job_refuses_a_checkpoint_of_another_plan(cli, fraud_plan, tmp_path):
    """The streaming job submitted by hand checks the checkpoint's claim itself, before its
    Spark session starts: one error line, exit 2, the checkpoint left as it was."""
    import os
    import subprocess
    import sys

    from cepplan.engine_adapter.spark.submit import spark_submit

    assert cli("generate", fraud_plan, "--streaming", "-o", tmp_path / "job", "-q").code == 0
    (tmp_path / "in").mkdir()
    (tmp_path / "ck").mkdir()
    claim = json.dumps({"job": "0" * 64, "source": str(tmp_path / "in"),
                        "output": str(tmp_path / "out")})
    (tmp_path / "ck" / "cepplan-stream.json").write_text(claim)
    done = subprocess.run(
        [spark_submit(), "--master", "local[1]", "--py-files", tmp_path / "job" / "runtime.zip",
         tmp_path / "job" / "job.py", "--follow", tmp_path / "in", "--out", tmp_path / "out",
         "--checkpoint", tmp_path / "ck"],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable,
             "PYSPARK_DRIVER_PYTHON": sys.executable}, capture_output=True, text=True,
        timeout=170)
    output = done.stdout + done.stderr  # spark-submit passes the driver's stderr on its stdout
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in output, output
    assert len(errors) == 1 and "another plan or workload" in errors[0], output
    assert (tmp_path / "ck" / "cepplan-stream.json").read_text() == claim
