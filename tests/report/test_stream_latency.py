"""`cepplan compare --stream-metrics`: the detection latency a `cepplan run --follow` run
measured, per pattern beside the workload's latency bound, in report.json, report.md and the
page; metrics that are not a stream's, or of another workload: one error line."""

from __future__ import annotations

import json

from tests.conftest import EXAMPLES
from tests.in_process import cepplan

FRAUD = EXAMPLES / "fraud" / "workload.json"
LATENCY = {"account_takeover": {"matches": 5, "p50": 0.125, "p99": 0.25, "max": 0.375},
           "withdrawal_abroad_after_login": {"matches": 295, "p50": 1.5, "p99": 2.5,
                                             "max": 3.5}}
BOUNDS = {"account_takeover": {"max_steps": 3, "max_time": None, "plan_steps": 2},
          "card_testing": {"max_steps": 3, "max_time": 90.0, "plan_steps": 3}}


def _metrics(path, stream, engine="local"):
    path.write_text(json.dumps({"engine": engine, "rows_read": 10, **(
        {"stream": stream} if stream is not None else {})}))
    return path


def test_latency_beside_its_bound(tmp_path):
    metrics = _metrics(tmp_path / "metrics.json", {
        "trigger_seconds": 1.0, "micro_batches": 7, "detection_latency_seconds": LATENCY,
        "latency_bound": BOUNDS})
    done = cepplan("compare", FRAUD, "--stream-metrics", metrics, "-o",
                   tmp_path / "report.html", "--time-limit", "2", "-q")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["stream"]["detection_latency_seconds"] == LATENCY
    assert report["stream"]["latency_bound"] == BOUNDS
    rows = {line.split(" | ")[0].strip("| "): line for line in
            (tmp_path / "report.md").read_text().splitlines() if line.startswith("| ")}
    assert "0.125 s | 0.25 s | 0.375 s | – | 3 | 2" in rows["account_takeover"]
    assert "| 0 | – | – | – | 90 " in rows["card_testing"]
    assert "1.5 s | 2.5 s | 3.5 s" in rows["withdrawal_abroad_after_login"]
    assert "Detection latency on a live stream" in (tmp_path / "report.html").read_text()


def test_latency_measured_on_spark_says_so(tmp_path):
    """A stream on Spark (`--engine spark`): the report names the engine that measured."""
    metrics = _metrics(tmp_path / "metrics.json", {
        "trigger_seconds": 1.0, "micro_batches": 7, "detection_latency_seconds": LATENCY,
        "latency_bound": BOUNDS}, engine="spark")
    done = cepplan("compare", FRAUD, "--stream-metrics", metrics, "-o",
                   tmp_path / "report.html", "--time-limit", "2", "-q")
    assert done.returncode == 0, done.stderr
    assert "Measured by `cepplan run --follow` on Spark:" in (
        tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "report.json").read_text())["stream"]["engine"] == "spark"


def test_metrics_of_a_batch_run(tmp_path):
    metrics = _metrics(tmp_path / "metrics.json", None)
    done = cepplan("compare", FRAUD, "--stream-metrics", metrics, "-o",
                   tmp_path / "report.html", "-q")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {metrics}: has no \"stream\" section: give the metrics.json of a "
        "`cepplan run --follow` run"]
    assert not (tmp_path / "report.html").exists()


def test_metrics_of_another_workload(tmp_path):
    metrics = _metrics(tmp_path / "metrics.json", {
        "detection_latency_seconds": {"goog_rise": LATENCY["account_takeover"]},
        "latency_bound": {}})
    done = cepplan("compare", FRAUD, "--stream-metrics", metrics, "-o",
                   tmp_path / "report.html", "-q")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "goog_rise" in line and "another workload" in line and "Traceback" not in line
