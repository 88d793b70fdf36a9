"""`cepplan run --follow DIR --engine spark --adaptive` on a real local Structured Streaming
query: the fraud workload's events at its planned rates, then its rare trigger frequent and
Withdrawal rare, dropped as one file per 100 minutes of event time, each after the last
micro-batch committed. The job measures the statistics of its horizon in its stateful step
(the progress rows carry the rates) and reports the drift once it has lasted; `cepplan run`
re-plans for it and, once the gain is worth a switch (Withdrawal's fall, seen a check later
than PasswordReset's rise, makes it so), publishes the plan to the checkpoint, where the
stream takes it up at a micro-batch and switches at the watermark. The spark-submit process
group is then killed (SIGKILL) and the same command continues from the checkpoint with the
new plan. The matches are the batch run's, none twice; one switch is recorded with its
reason and modelled gain. Two streaming queries (two JVMs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from benchmarks.drifting_fraud import DRIFTED, drifting_events, fraud_workload
from cepplan.stats.synth_write import write_events
from tests.engine.test_spark_stream import _committed, _spark_submit_of, _wait_for

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

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


def test_a_drifting_stream_on_spark_switches_plans_and_the_switch_survives_a_kill(tmp_path):
    plan = tmp_path / "plan.json"
    _cepplan("optimize", WORKLOAD, "-o", plan, "-q")
    workload = fraud_workload()
    events = drifting_events(workload, [(CHANGE, {}), (700.0, DRIFTED)], 5)
    write_events(events, workload, tmp_path / "all.csv")
    _cepplan("run", plan, tmp_path / "all.csv", "-o", tmp_path / "batch", "-q")
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    source.mkdir()
    command = [sys.executable, "-m", "cepplan", "run", plan, "--follow", source, "-o", out,
               "--engine", "spark", "--master", "local[2]", "--trigger", "0.5",
               "--adaptive", "--replan-horizon", f"{HORIZON:g}", "--checkpoint", checkpoint]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    commits, published = checkpoint / "spark" / "commits", checkpoint / "plans" / "plan-1.json"
    piece = np.floor(events["__ts"].to_numpy() / PIECE)
    starts = list(np.unique(piece) * PIECE)  # each file's first minute
    kill_after = starts.index(CHANGE + 5 * HORIZON)  # the plan published before it

    def drop(number: int, follow: subprocess.Popen) -> None:
        if starts[number] == CHANGE + 5 * HORIZON:  # the drift worth a switch was reported
            _wait_for(published.exists, "no plan published", follow)
        hidden = source / f".part-{number:02d}.csv"
        write_events(events[piece * PIECE == starts[number]], workload, hidden)
        hidden.rename(source / f"part-{number:02d}.csv")
        _wait_for(lambda: sum(1 for _ in commits.glob("[0-9]*")) > number,
                  "no micro-batch committed", follow)

    follow = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for number in range(kill_after + 1):
            drop(number, follow)
        os.killpg(_spark_submit_of(follow.pid), signal.SIGKILL)
        assert follow.wait(timeout=BOUND) != 0
        follow = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        for number in range(kill_after + 1, len(starts)):
            drop(number, follow)
        (source / "_END").touch()
        said, warned = (text.decode() for text in follow.communicate(timeout=BOUND))
    finally:
        follow.kill()
        follow.wait()
    assert follow.returncode == 0, warned

    batch = (tmp_path / "batch" / "matches" / "part-00000.jsonl").read_text().splitlines()
    streamed = _matches(_committed(out, "matches"))
    assert streamed == _matches(batch) and len(batch) > 50 and max(streamed.values()) == 1
    progress = [json.loads(line) for line in _committed(out, "progress")]
    calm = [row for row in progress if "statistics" in row and row["watermark"] <= CHANGE]
    assert calm and all(row["statistics"]["drifted"] == [] for row in calm)
    stream = json.loads((out / "metrics.json").read_text())["stream"]
    assert stream["adaptive"] and len(stream["switches"]) == 1 and stream["drifts"]
    assert sorted(r["reported_at"] for r in stream["replans"]) == \
        [d["micro_batch"] for d in stream["drifts"]]  # each drift re-planned once
    switched = [r for r in stream["replans"] if r["switched"]]
    assert len(switched) == 1 and switched[0]["plan_file"] == "plans/plan-1.json"
    record, switch = switched[0], stream["switches"][0]
    assert (record["micro_batch"], record["watermark"]) == \
        (switch["micro_batch"], switch["watermark"])
    assert record["reported_at"] < record["micro_batch"] and \
        CHANGE < record["watermark"] <= CHANGE + 5 * HORIZON
    assert any("Withdrawal" in reason for reason in record["reason"])
    assert record["modelled_gain"] > 1.5
    assert any(line.startswith("account_takeover:") for line in record["changes"])
    chosen = json.loads((out / record["plan_file"]).read_text())
    assert chosen["invariants"] and chosen != json.loads(plan.read_text())
    assert f"re-planned at micro-batch {record['micro_batch']}" in said
    assert "the new plan: plans/plan-1.json in the output directory" in said
