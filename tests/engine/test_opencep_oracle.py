"""OpenCEP as the oracle for `seq_ties: allow` on its own minute-bar test file (many events
share a minute): SEQ(a:MSFT, b:DRIV, c:MSFT), a.peak < c.peak, b.volume > 1000, within 10 min.
Needs OPENCEP_SRC (an OpenCEP checkout); skipped, saying so, without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.stock_bars import write_workload
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload

ROOT = Path(__file__).resolve().parents[2]
SOURCE = os.environ.get("OPENCEP_SRC")


@pytest.mark.skipif(not SOURCE, reason="OPENCEP_SRC is not set (no OpenCEP checkout)")
def test_ties_allowed_match_opencep(tmp_path):
    events = Path(SOURCE) / "test" / "EventFiles" / "NASDAQ_MEDIUM.txt"
    tickers = sorted({line.split(",")[0] for line in events.read_text().splitlines()})
    write_workload(tmp_path / "workload.json", ["msft"], tickers=tickers)
    workload = load_workload(tmp_path / "workload.json")
    run_local_job(job_data(workload, trivial_plan(workload)), [str(events)], tmp_path / "out",
                  say=lambda _: None)
    ours = sorted(tuple(sorted(e["id"] for e in json.loads(line)["events"].values()))
                  for line in (tmp_path / "out" / "matches" / "part-00000.jsonl")
                  .read_text().splitlines())
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "opencep_stocks.py"), SOURCE,
                    "msft", str(events), str(tmp_path / "opencep.json")], check=True,
                   cwd=SOURCE)
    theirs = sorted(tuple(m) for m in
                    json.loads((tmp_path / "opencep.json").read_text())["matches"])
    assert len(theirs) > 10_000
    assert ours == theirs
