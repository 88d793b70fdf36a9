"""`cepplan run --workers N`: a count that is not a whole number from 1 to 256 is one
`error: --workers: ...` line and exit code 2, before any work (no output directory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "two", "", "257", "99999999999999999999"])
def test_bad_worker_counts_are_refused(cli, fraud, tmp_path, value):
    out = tmp_path / "out"
    result = cli("run", _plan(cli, fraud), fraud / "events.csv", "-o", out,
                 f"--workers={value}")
    result.one_error("--workers:", "worker processes")
    assert not out.exists()


def test_one_worker_and_the_most_are_taken(cli, fraud, tmp_path):
    """1 and 256 run: the fraud events are one time range, matched without starting any
    worker (a worker is started when a range comes for it)."""
    plan = _plan(cli, fraud)
    for value in ("1", "256"):
        result = cli("run", plan, fraud / "events.csv", "-o",
                     tmp_path / value, "--workers", value, "-q", "--engine", "local")
        assert result.code == 0, result.err
        assert json.loads((tmp_path / value / "metrics.json").read_text())["workers"] == 1


def _plan(cli, fraud: Path) -> Path:
    plan = fraud / "plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "-q").code == 0
    return plan
