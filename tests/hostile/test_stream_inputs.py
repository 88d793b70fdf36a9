"""`cepplan run --follow` and `cepplan replay` on bad input and in real runs: a missing or
wrong source, a bad `max_delay`, an output that is not new, a plan a stream cannot run — one
error line each; a malformed line mid-stream is counted and the stream goes on; files dropped
into a followed directory (one half-written under a hidden name first) are read once
complete; SIGTERM drains and exits 0 with whole outputs. Matches are compared with the batch
run of the same events (no wall-clock assertion: only generous bounds against hangs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.conftest import EXAMPLES, ROOT

BOUND = 90  # seconds a subprocess may take before the case fails (a hang, not slowness)


@pytest.fixture(scope="module")
def fraud_plan(tmp_path_factory) -> tuple[Path, Path]:
    """The fraud example's plan and its batch run's matches (sorted lines)."""
    folder = tmp_path_factory.mktemp("fraud")
    plan = folder / "plan.json"
    _cepplan("optimize", EXAMPLES / "fraud" / "workload.json", "-o", plan, "-q")
    _cepplan("run", plan, EXAMPLES / "fraud" / "events.csv", "-o", folder / "batch", "-q")
    return plan, folder / "batch"


def _cepplan(*args: object, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "cepplan", *map(str, args)], env=env,
                          capture_output=True, timeout=BOUND, **kwargs)
    assert done.returncode == 0, done.stderr.decode()
    return done


def _matches(out: Path) -> list[str]:
    return sorted((out / "matches" / "part-00000.jsonl").read_text().splitlines())


def _lines() -> list[str]:
    return (EXAMPLES / "fraud" / "events.csv").read_text().splitlines(keepends=True)


def test_missing_source_directory(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], "--follow", tmp_path / "nowhere", "-o", tmp_path / "out",
        "-q").one_error("nowhere", "no such directory to follow")


def test_source_is_a_file(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], "--follow", EXAMPLES / "fraud" / "events.csv", "-o",
        tmp_path / "out", "-q").one_error("events.csv", "not a directory")


def test_output_not_empty(cli, fraud_plan, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan[0], "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "-q").one_error("out", "not empty")
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_events_and_follow_together(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], EXAMPLES / "fraud" / "events.csv", "--follow", tmp_path,
        "-o", tmp_path / "out", "-q").one_error("not both")


@pytest.mark.parametrize(("value", "fragment"), [
    (-1, "positive"), ("-2min", "cannot read duration"), (2000, "more than a day"),
    (True, "expected a number")])
def test_bad_max_delay(cli, fraud, tmp_path, value, fragment):
    """A negative delay, or a bare number over a day in the time unit (minutes here)."""
    raw = json.loads((fraud / "workload.json").read_text())
    raw.setdefault("options", {})["max_delay"] = value
    (fraud / "workload.json").write_text(json.dumps(raw))
    cli("validate", fraud / "workload.json").one_error("max_delay", fragment)


def test_long_max_delay_with_its_unit(cli, fraud):
    """Over a day is accepted when written with its unit."""
    raw = json.loads((fraud / "workload.json").read_text())
    raw.setdefault("options", {})["max_delay"] = "36h"
    (fraud / "workload.json").write_text(json.dumps(raw))
    assert cli("validate", fraud / "workload.json").code == 0


def test_plan_a_stream_cannot_run(cli, tmp_path):
    """A pattern reading another's matches (network's hierarchy) is refused."""
    plan = tmp_path / "plan.json"
    assert cli("optimize", EXAMPLES / "network" / "workload.json", "-o", plan, "-q").code == 0
    (tmp_path / "in").mkdir()
    cli("run", plan, "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "-q").one_error("plan.json", "--follow runs plans")


def test_malformed_lines_mid_stream_are_counted(fraud_plan, tmp_path):
    """Standard input with two malformed lines in the middle: counted by reason, the other
    rows give the batch run's matches on the same lines."""
    lines = _lines()
    broken = ["Login,not-a-time,k1,s0,s0,,\n", "Login,1.5,k0,s0,s0,,,extra\n"]
    bad = lines[:3000] + broken + lines[3000:]
    data = "".join(bad)
    (tmp_path / "events.csv").write_text(data)
    _cepplan("run", fraud_plan[0], tmp_path / "events.csv", "-o", tmp_path / "batch", "-q")
    _cepplan("run", fraud_plan[0], "--follow", "-", "-o", tmp_path / "out", "-q",
             "--trigger", "0.05", input=data.encode())
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert sum(metrics["rows_rejected"].values()) == 2, metrics["rows_rejected"]
    assert metrics["rows_read"] == len(bad) - 1
    assert _matches(tmp_path / "out") == _matches(tmp_path / "batch")


def test_files_dropped_into_a_followed_directory(fraud_plan, tmp_path):
    """`cepplan replay --to DIR` drops files into the directory while `run --follow` reads
    it; a half-written hidden file is ignored. Same matches as the batch run."""
    source = tmp_path / "in"
    source.mkdir()
    (source / ".half-written.csv.tmp").write_text(_lines()[0] + "Login,1.0,k0")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    follow = subprocess.Popen([sys.executable, "-m", "cepplan", "run", fraud_plan[0],
                               "--follow", source, "-o", tmp_path / "out", "-q",
                               "--trigger", "0.05"], env=env, stderr=subprocess.PIPE)
    try:
        _cepplan("replay", EXAMPLES / "fraud" / "events.csv", "-w",
                 EXAMPLES / "fraud" / "workload.json", "--to", source, "--rate", "40000",
                 "-q")
        assert follow.wait(timeout=BOUND) == 0, follow.stderr.read().decode()
    finally:
        follow.kill()
    assert len([p for p in source.iterdir() if p.name.startswith("part-")]) > 1
    assert _matches(tmp_path / "out") == _matches(fraud_plan[1])
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["rows_read"] == len(_lines()) - 1
    latency = metrics["stream"]["detection_latency_seconds"]
    assert latency and all(0 <= v["p50"] <= v["p99"] <= v["max"] for v in latency.values())


def test_sigterm_drains_and_exits_cleanly(fraud_plan, tmp_path):
    """SIGTERM while following: the events received are matched to the end (the final
    flush), metrics.json written, exit 0."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "events.csv").write_text("".join(_lines()))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    follow = subprocess.Popen([sys.executable, "-m", "cepplan", "run", fraud_plan[0],
                               "--follow", source, "-o", out, "-q", "--trigger", "0.05"],
                              env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + BOUND  # matches appear once the file has been read
        part = out / "matches" / "part-00000.jsonl"
        while not (part.exists() and part.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.05)
        follow.send_signal(signal.SIGTERM)
        assert follow.wait(timeout=BOUND) == 0, follow.stderr.read().decode()
    finally:
        follow.kill()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["stream"]["stopped_by_signal"]
    assert _matches(out) == _matches(fraud_plan[1])


def test_replay_rate_and_speed_together(cli, tmp_path):
    cli("replay", EXAMPLES / "fraud" / "events.csv", "-w", EXAMPLES / "fraud" / "workload.json",
        "--to", tmp_path / "in", "--rate", "10", "--speed", "2").one_error("--rate", "not both")


@pytest.mark.parametrize(("shuffle", "late"), [("30s", False), ("90s", True)])
def test_replayed_shuffle_within_the_delay_is_never_late(fraud, tmp_path, shuffle, late):
    """Replayed shuffled within max_delay (30 s): no event late, as many matches as the batch
    run; shuffled within three times that: late events counted, each written aside."""
    raw = json.loads((fraud / "workload.json").read_text())
    raw.setdefault("options", {})["max_delay"] = "30s"
    (fraud / "workload.json").write_text(json.dumps(raw))
    plan = tmp_path / "plan.json"
    _cepplan("optimize", fraud / "workload.json", "-o", plan, "-q")
    _cepplan("run", plan, fraud / "events.csv", "-o", tmp_path / "batch", "-q")
    replayed = _cepplan("replay", fraud / "events.csv", "-w", fraud / "workload.json",
                        "--to", "-", "--shuffle-within", shuffle, "--seed", "3", "-q").stdout
    assert replayed != (fraud / "events.csv").read_bytes()  # the order did change
    _cepplan("run", plan, "--follow", "-", "-o", tmp_path / "out", "-q", input=replayed)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    counted = sum(metrics["stream"]["late_events"].values())
    written = (tmp_path / "out" / "late-events.jsonl").read_text().splitlines()
    assert counted == len(written)
    assert (counted > 0) == late
    if not late:
        batch = json.loads((tmp_path / "batch" / "metrics.json").read_text())
        assert metrics["matches"] == batch["matches"]


def test_a_tcp_stream_on_loopback(fraud_plan, tmp_path):
    """`replay --to tcp://` serves the events to `run --follow tcp://` (a real socket on
    loopback): the batch run's matches; the stream ends when the server closes."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as probe:  # a free port
        port = probe.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    feed = subprocess.Popen([sys.executable, "-m", "cepplan", "replay",
                             EXAMPLES / "fraud" / "events.csv", "-w",
                             EXAMPLES / "fraud" / "workload.json", "--to", url, "-q"], env=env)
    try:
        _cepplan("run", fraud_plan[0], "--follow", url, "-o", tmp_path / "out", "-q")
        assert feed.wait(timeout=BOUND) == 0
    finally:
        feed.kill()
    assert _matches(tmp_path / "out") == _matches(fraud_plan[1])


def test_bad_tcp_address(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], "--follow", "tcp://nohost", "-o", tmp_path / "out",
        "-q").one_error("tcp://nohost", "tcp://HOST:PORT")
