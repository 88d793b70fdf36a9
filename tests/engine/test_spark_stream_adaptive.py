"""`cepplan run --follow DIR --engine spark --adaptive` on a real local Structured Streaming
query: the fraud workload's events at its planned rates, then its rare trigger frequent and
Withdrawal rare, dropped as one file per 100 minutes of event time, each after the last
micro-batch committed. The job measures the statistics of its horizon in its stateful step
(the progress rows carry the rates) and reports the drift once it has lasted — which
statistics, since when — and `cepplan run` prices it: the plan it asks for with its modelled
gain, written to OUT/plans/ once the gain is worth a switch (Withdrawal's fall, seen a check
later than PasswordReset's rise, makes it so). The Spark stream keeps its plan: its matches
are the batch run's. One streaming query (one JVM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.drifting_fraud import DRIFTED, drifting_events, fraud_workload
from cepplan.stats.synth_write import write_events
from tests.engine.test_spark_stream import _committed

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "examples" / "fraud" / "workload.json"
BOUND = 300  # seconds the stream may take before the case fails (a hang, not slowness)
CHANGE, PIECE, HORIZON = 300.0, 100.0, 100.0  # minutes of event time


def _cepplan(*args: object) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "cepplan", *map(str, args)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr
    return done


def _matches(lines: list[str]) -> Counter:
    return Counter(json.dumps(json.loads(line), sort_keys=True) for line in lines)


def test_a_drifting_stream_on_spark_reports_the_drift_and_the_plan_it_asks_for(tmp_path):
    plan = tmp_path / "plan.json"
    _cepplan("optimize", WORKLOAD, "-o", plan, "-q")
    workload = fraud_workload()
    events = drifting_events(workload, [(CHANGE, {}), (500.0, DRIFTED)], 5)
    write_events(events, workload, tmp_path / "all.csv")
    _cepplan("run", plan, tmp_path / "all.csv", "-o", tmp_path / "batch", "-q")
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    command = [sys.executable, "-m", "cepplan", "run", plan, "--follow", source, "-o", out,
               "--engine", "spark", "--master", "local[2]", "--trigger", "0.5",
               "--adaptive", "--replan-horizon", f"{HORIZON:g}"]
    commits = tmp_path / "ckpt" / "spark" / "commits"
    follow = subprocess.Popen([*command, "--checkpoint", tmp_path / "ckpt"],
                              env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        piece = np.floor(events["__ts"].to_numpy() / PIECE)
        for number, start in enumerate(np.unique(piece)):
            hidden = source / f".part-{number:02d}.csv"
            write_events(events[piece == start], workload, hidden)
            hidden.rename(source / f"part-{number:02d}.csv")
            deadline = time.monotonic() + BOUND
            while sum(1 for p in commits.glob("[0-9]*")) < number + 1:
                assert follow.poll() is None, follow.stderr.read()
                assert time.monotonic() < deadline, "no micro-batch committed"
                time.sleep(0.1)
        (source / "_END").touch()
        said, warned = follow.communicate(timeout=BOUND)
    finally:
        follow.kill()
        follow.wait()
    assert follow.returncode == 0, warned

    batch = (tmp_path / "batch" / "matches" / "part-00000.jsonl").read_text().splitlines()
    assert _matches(_committed(out, "matches")) == _matches(batch) and len(batch) > 50
    progress = [json.loads(line) for line in _committed(out, "progress")]
    measured = [row for row in progress if "statistics" in row]
    assert measured and all(row["watermark"] >= HORIZON for row in measured)
    calm = [row for row in measured if row["watermark"] <= CHANGE]
    assert calm and all(row["statistics"]["drifted"] == [] for row in calm)
    assert all(abs(row["statistics"]["rates"]["PasswordReset"] - DRIFTED["PasswordReset"])
               < 0.3 * DRIFTED["PasswordReset"] for row in measured
               if row["watermark"] >= CHANGE + HORIZON)

    stream = json.loads((out / "metrics.json").read_text())["stream"]
    assert stream["adaptive"] and stream["replans"] == [] and stream["drifts"]
    first = stream["drifts"][0]
    assert CHANGE < first["since"] < first["watermark"] <= CHANGE + 2 * HORIZON
    assert "rate of PasswordReset" in [v["statistic"] for v in first["violations"]]
    assert all(r["modelled_gain"] >= 1.0 for r in stream["drifts"])
    priced = [r for r in stream["drifts"] if r["plan_file"]]  # those worth a switch
    assert priced and priced[0]["plan_file"] == "plans/plan-1.json"
    assert priced[0]["modelled_gain"] > 1.5 and priced[0]["watermark"] <= CHANGE + 4 * HORIZON
    assert any(line.startswith("account_takeover:") for line in priced[0]["changes"])
    chosen = json.loads((out / priced[0]["plan_file"]).read_text())
    assert chosen["invariants"] and chosen != json.loads(plan.read_text())
    assert "statistics drifted at micro-batch" in said and "keeps its plan" in said
