"""`cepplan run --follow --adaptive` on bad input and in real runs: the options a re-planning
stream cannot take (no --follow, a checkpoint, a bad horizon, on Spark too; `generate
--adaptive` without `--streaming`) get one error line each; a plan
from an older version (no invariants) runs to the end after one warning, with the batch run's
matches; a replayed fraud wave re-plans, switches and still gives the batch run's matches,
with the switch in metrics.json and the end-of-run lines (no wall-clock assertion)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.drifting_fraud import WAVE, drifting_events, fraud_workload
from cepplan.planner.plan import CONTENT_DIGEST, content_digest
from cepplan.stats.synth_write import write_events
from tests.hostile.conftest import EXAMPLES, ROOT
from tests.hostile.test_stream_inputs import BOUND, _cepplan, _made

WORKLOAD = EXAMPLES / "fraud" / "workload.json"


@pytest.fixture(scope="module")
def fraud_plan(tmp_path_factory) -> Path:
    plan = tmp_path_factory.mktemp("fraud") / "plan.json"
    _made("optimize", WORKLOAD, "-o", plan, "-q")
    return plan


def _matches(out: Path) -> list[str]:
    """The matches as a multiset, each with its keys in one order (the order of a match's
    variables follows its plan's join order)."""
    lines = (out / "matches" / "part-00000.jsonl").read_text().splitlines()
    return sorted(json.dumps(json.loads(line), sort_keys=True) for line in lines)


def test_adaptive_without_follow(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan, EXAMPLES / "fraud" / "events.csv", "-o", tmp_path / "out",
        "--adaptive", "-q").one_error("--adaptive", "--follow")


def test_replan_horizon_without_adaptive(cli, fraud_plan, tmp_path):
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan, "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "--replan-horizon", "10h", "-q").one_error("--replan-horizon", "--adaptive")


def test_adaptive_with_a_checkpoint(cli, fraud_plan, tmp_path):
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan, "--follow", tmp_path / "in", "-o", tmp_path / "out", "--adaptive",
        "--checkpoint", tmp_path / "ckpt", "-q").one_error("--adaptive", "--checkpoint")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("value", "fragment"), [("soon", "duration"), ("0", "positive")])
def test_bad_replan_horizon_on_spark(cli, fraud_plan, tmp_path, value, fragment):
    """Checked before any JVM starts: nothing is written."""
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan, "--follow", tmp_path / "in", "-o", tmp_path / "out", "--adaptive",
        f"--replan-horizon={value}", "--engine", "spark", "-q").one_error("--replan-horizon",
                                                                          fragment)
    assert not (tmp_path / "out").exists()


def test_generate_adaptive_without_streaming(cli, fraud_plan, tmp_path):
    cli("generate", fraud_plan, "-o", tmp_path / "job", "--adaptive",
        "-q").one_error("--adaptive", "--streaming")
    cli("generate", fraud_plan, "-o", tmp_path / "job", "--streaming", "--replan-horizon",
        "2h", "-q").one_error("--replan-horizon", "--adaptive")
    assert not (tmp_path / "job").exists()


def test_generate_adaptive_carries_the_horizon_and_invariants(cli, fraud_plan, tmp_path):
    """The job's `adaptive` section: the horizon in the workload's unit (minutes), the plan's
    invariants and the workload's own text."""
    assert cli("generate", fraud_plan, "-o", tmp_path / "job", "--streaming", "--adaptive",
               "--replan-horizon", "2h", "-q").code == 0
    section = json.loads((tmp_path / "job" / "job.json").read_text())["adaptive"]
    assert section["horizon"] == 120.0
    assert section["invariants"] == json.loads(fraud_plan.read_text())["invariants"]
    assert section["workload"] == WORKLOAD.read_text()


def test_generate_adaptive_of_an_older_plan_warns_once(cli, fraud_plan, tmp_path):
    """A plan without invariants: one warning, the job written without checking its
    statistics."""
    raw = json.loads(fraud_plan.read_text())
    body = {k: v for k, v in raw.items() if k not in ("invariants", CONTENT_DIGEST)}
    old = tmp_path / "old-plan.json"
    old.write_text(json.dumps({**body, CONTENT_DIGEST: content_digest(body)}))
    done = cli("generate", old, "-w", WORKLOAD, "-o", tmp_path / "job", "--streaming",
               "--adaptive", "-q")
    assert done.code == 0 and done.err.count("no invariants") == 1, done.err
    assert "adaptive" not in json.loads((tmp_path / "job" / "job.json").read_text())


@pytest.mark.parametrize(("value", "fragment"), [
    ("soon", "duration"), ("-5min", "duration"), ("0", "positive"), ("0s", "positive")])
def test_bad_replan_horizon(cli, fraud_plan, tmp_path, value, fragment):
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan, "--follow", tmp_path / "in", "-o", tmp_path / "out", "--adaptive",
        f"--replan-horizon={value}", "-q").one_error("--replan-horizon", fragment)


@pytest.mark.parametrize("value", ["0", "1.5", "nan", "lots"])
def test_bad_statistics_share(cli, fraud_plan, tmp_path, monkeypatch, value):
    monkeypatch.setenv("CEPPLAN_STATISTICS_SHARE", value)
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan, "--follow", tmp_path / "in", "-o", tmp_path / "out", "--adaptive",
        "-q").one_error("CEPPLAN_STATISTICS_SHARE", "at most 1")


def test_a_plan_from_an_older_version_runs_unchanged(fraud_plan, tmp_path):
    """No invariants section (an older cepplan's plan, its digest whole): one warning, the
    stream goes on to the end with the batch run's matches."""
    raw = json.loads(fraud_plan.read_text())
    body = {k: v for k, v in raw.items() if k not in ("invariants", CONTENT_DIGEST)}
    old = tmp_path / "old-plan.json"
    old.write_text(json.dumps({**body, CONTENT_DIGEST: content_digest(body)}))
    events = EXAMPLES / "fraud" / "events.csv"
    _made("run", old, "-w", WORKLOAD, events, "-o", tmp_path / "batch", "-q")
    done = _cepplan("run", old, "-w", WORKLOAD, "--follow", "-", "-o", tmp_path / "out",
                    "--adaptive", "-q", "--trigger", "0.05", input=events.read_bytes())
    warnings = [line for line in done.stderr.decode().splitlines() if line.strip()]
    assert len(warnings) == 1 and "no invariants" in warnings[0], warnings
    assert _matches(tmp_path / "out") == _matches(tmp_path / "batch")
    stream = json.loads((tmp_path / "out" / "metrics.json").read_text())["stream"]
    assert stream["replans"] == [] and stream["adaptive"] is False


def test_a_replayed_fraud_wave_switches_plans_with_the_batch_matches(fraud_plan, tmp_path,
                                                                     monkeypatch):
    """Checked at each point due (CEPPLAN_STATISTICS_SHARE=1), however busy the machine; a
    horizon of 200 minutes is checked each 50, so the drift is seen well inside the 700-minute
    wave however the micro-batches fall (with the default 100 windows a busy machine's
    coarser micro-batches could leave too few checks in the wave to see it last)."""
    monkeypatch.setenv("CEPPLAN_STATISTICS_SHARE", "1")
    workload = fraud_workload()
    wave = {name: min(rate, 20.0) for name, rate in WAVE.items()}  # smaller: a quicker test
    events = drifting_events(workload, [(1000.0, {}), (700.0, wave)], seed=5)
    path = tmp_path / "wave.csv"
    write_events(events, workload, path)
    _made("run", fraud_plan, "-w", WORKLOAD, path, "-o", tmp_path / "batch", "-q")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    feed = subprocess.Popen([sys.executable, "-m", "cepplan", "replay", str(path), "-w",
                             str(WORKLOAD), "--to", "-", "--rate", "8000", "-q"],
                            stdout=subprocess.PIPE, env=env)
    terminal, progress = _terminal()  # stderr a terminal: the progress line is drawn
    try:
        done = subprocess.run([sys.executable, "-m", "cepplan", "run", str(fraud_plan), "-w",
                               str(WORKLOAD), "--follow", "-", "-o", str(tmp_path / "out"),
                               "--adaptive", "--replan-horizon", "200min", "--trigger",
                               "0.05"], stdin=feed.stdout,
                              stdout=subprocess.PIPE, stderr=terminal, env=env,
                              timeout=BOUND)
    finally:
        os.close(terminal)
        feed.stdout.close()
        assert feed.wait(timeout=BOUND) == 0
    assert done.returncode == 0
    assert _matches(tmp_path / "out") == _matches(tmp_path / "batch")
    stream = json.loads((tmp_path / "out" / "metrics.json").read_text())["stream"]
    switched = [r for r in stream["replans"] if r["switched"]]
    assert len(switched) <= 1, stream["replans"]
    if stream["micro_batches"] < 20 and not switched:
        pytest.skip(f"the stream arrived in {stream['micro_batches']} micro-batches (a busy "
                    "machine queued it): too few checks to see the drift last; the switch "
                    "itself is tested in tests/engine/test_adaptive_stream.py")
    assert len(switched) == 1, (stream["micro_batches"], stream["replans"])
    record = switched[0]
    assert all(r["watermark"] > 1000 for r in stream["replans"])  # after the change only
    assert record["modelled_gain"] > 1 and record["changes"]
    new = json.loads((tmp_path / "out" / record["plan_file"]).read_text())  # plans/plan-1.json
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["plan"]["provenance"].items() <= new["provenance"].items()  # in force
    assert metrics["plan"]["predicted"] == {name: {"expected_cost": p["detection"]
                                                   ["expected_cost"], "naive_cost":
                                                   p["naive_cost"], "solver": p["solver"]}
                                            for name, p in new["patterns"].items()}
    printed = done.stdout.decode()
    assert f"re-planned at micro-batch {record['micro_batch']}" in printed
    assert record["changes"][0] in printed
    assert f"the new plan: {record['plan_file']}" in printed
    shown = progress()
    assert f"plan switched at batch {record['micro_batch']}" in shown, shown[-500:]


def _terminal() -> tuple[int, Callable[[], str]]:
    """A pseudo-terminal: the descriptor a child writes to, and what it wrote (read by a
    thread, so that the child never blocks on a full terminal)."""
    reader, writer = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # the writing side closed
                return
            if not chunk:
                return
            chunks.append(chunk)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()

    def text() -> str:
        thread.join(timeout=10)
        os.close(reader)
        return b"".join(chunks).decode(errors="replace")

    return writer, text
