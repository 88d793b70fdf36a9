"""`cepplan compare --stream-metrics` with an adaptive stream's metrics: the plan switches
over event time, each with why, what changed, the modelled gain and the throughput before and
after, in report.json, report.md and the page (a real headless Chromium draws the plot); a
malformed `replans`: one error line."""

from __future__ import annotations

import json

from tests.conftest import EXAMPLES
from tests.in_process import cepplan
from tests.report.test_report_browser import _open, browser  # noqa: F401 - a fixture

FRAUD = EXAMPLES / "fraud" / "workload.json"
REPLANS = [
    {"micro_batch": 7, "watermark": 20375.5, "reason": [
        "PasswordReset: 19.6 events per minute, the plan holds for up to 0.198"],
     "changes": ["account_takeover: steps r -> w -> l became l -> r -> w"], "switched": True,
     "modelled_gain": 240.25, "replan_seconds": 0.5, "throughput_before": 61000.0,
     "throughput_after": 152000.0, "throughput_batches": 3},
    {"micro_batch": 40, "watermark": 52000.0, "reason": [
        "Login: 1.4 events per minute, the plan holds for up to 0.2"],
     "changes": [], "switched": False, "modelled_gain": 0.97, "replan_seconds": 0.25,
     "throughput_before": 150000.0, "throughput_after": None, "throughput_batches": 0},
]


def _compare(tmp_path, replans):
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"engine": "local", "stream": {
        "trigger_seconds": 1.0, "micro_batches": 50, "detection_latency_seconds": {},
        "latency_bound": {}, "replans": replans}}))
    return cepplan("compare", FRAUD, "--stream-metrics", metrics, "-o",
                   tmp_path / "report.html", "--time-limit", "2", "-q")


def test_switches_in_the_report(tmp_path):
    done = _compare(tmp_path, REPLANS)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "report.json").read_text())["stream"]["replans"] == REPLANS
    rows = [line for line in (tmp_path / "report.md").read_text().splitlines()
            if line.startswith("| 7 ") or line.startswith("| 40 ")]
    assert len(rows) == 2, rows
    assert "20,376 min" in rows[0]
    assert "account_takeover: steps r" in rows[0] and "240" in rows[0] and "61,000" in rows[0]
    assert "152,000" in rows[0]
    assert "kept the plan" in rows[1]
    assert "Plan switches on a live stream" in (tmp_path / "report.html").read_text()


def test_a_malformed_replan(tmp_path):
    bad = [{**REPLANS[0], "watermark": "late"}]
    done = _compare(tmp_path, bad)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "stream.replans[0]" in lines[0], lines
    assert not (tmp_path / "report.html").exists()


def test_the_page_draws_the_switches(browser, tmp_path):  # noqa: F811 - the fixture
    done = _compare(tmp_path, REPLANS)
    assert done.returncode == 0, done.stderr
    page, errors = _open(browser, (tmp_path / "report.html").as_uri(), 1280)
    section = page.locator("section#plan-switches")
    assert section.count() == 1
    plot = section.locator('svg[aria-label="Plan switches over time"]')
    assert plot.count() == 1 and plot.bounding_box()["height"] > 50
    page.locator("section#plan-switches details:not([open]) > summary").all()
    assert section.locator("table tbody tr").count() == len(REPLANS)
    assert errors == []
    page.close()
