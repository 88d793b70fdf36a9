"""`cepplan run --workers N`: a count that is not a whole number from 1 to 256 is one
`error: --workers: ...` line and exit code 2, before any work (no output directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import ROOT
from tests.in_process import cepplan as in_process


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "two", "", "257", "99999999999999999999",
                                   "AUTO", "auto2"])
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


def test_default_is_one_worker_and_auto_the_cores_cepplan_may_use(tmp_path):
    """Without --workers, one process matches an input of several time ranges; `--workers
    auto` uses the cores of cepplan's CPU affinity (one when it is allowed one core, two when
    allowed two); --workers 2 on one core still starts two."""
    from benchmarks.stock_bars import workload, write_bars

    write_bars(tmp_path / "bars.txt", 100_000)  # 10,000 GOOG bars: two time ranges
    wl = workload(["goog"])
    (tmp_path / "workload.json").write_text(json.dumps(wl))
    cepplan = [sys.executable, "-m", "cepplan"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    assert in_process("optimize", tmp_path / "workload.json", "-o", tmp_path / "plan.json",
                      "-q").returncode == 0  # the set-up: in this process
    cores = sorted(os.sched_getaffinity(0))
    cases = [([], cores, 1), (["--workers", "auto"], cores[:1], 1),
             (["--workers", "2"], cores[:1], 2)]
    if len(cores) >= 2:
        cases.append((["--workers", "auto"], cores[:2], 2))
    for number, (flags, allowed, expected) in enumerate(cases):
        out = tmp_path / f"out{number}"
        subprocess.run([*cepplan, "run", tmp_path / "plan.json", tmp_path / "bars.txt", "-o",
                        out, "-q", "--engine", "local", *flags], check=True, cwd=ROOT, env=env,
                       timeout=120, preexec_fn=lambda allowed=allowed: os.sched_setaffinity(
                           0, set(allowed)))
        assert json.loads((out / "metrics.json").read_text())["workers"] == expected
