"""`cepplan run --follow tcp://HOST:PORT --engine spark`: a real server on loopback sends the
fraud events (CSV, header first) in a few bursts; once the sink has committed every row,
SIGTERM ends the stream (exit 0). The matches are the batch run's on the same file: the
lines keep their order, so the event ids (positions) are the batch run's too. An address
nobody serves: one error line, the output left empty."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from tests.engine.test_spark_stream import BOUND, FRAUD, ROOT, _cepplan, _committed, _wait_for

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)


def _serve(server: socket.socket, text: bytes, done: threading.Event) -> None:
    """Send `text` to the first client in four bursts, then hold the connection open."""
    client, _ = server.accept()
    with client:
        lines = text.splitlines(keepends=True)
        for i in range(4):
            client.sendall(b"".join(lines[len(lines) * i // 4:len(lines) * (i + 1) // 4]))
            time.sleep(0.5)
        done.wait(BOUND)


def test_a_socket_stream_on_spark_matches_the_batch_run(tmp_path):
    plan = tmp_path / "plan.json"
    _cepplan("optimize", FRAUD / "workload.json", "-o", plan, "-q")
    _cepplan("run", plan, FRAUD / "events.csv", "-o", tmp_path / "batch", "-q")
    text = (FRAUD / "events.csv").read_bytes()
    rows = text.count(b"\n") - 1
    server = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()
    threading.Thread(target=_serve, args=(server, text, done), daemon=True).start()
    out = tmp_path / "out"
    follow = subprocess.Popen(
        [sys.executable, "-m", "cepplan", "run", plan, "--follow",
         f"tcp://127.0.0.1:{server.getsockname()[1]}", "-o", out, "--engine", "spark",
         "--master", "local[2]", "--trigger", "0.5", "-q"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE)

    def all_read() -> bool:
        if not (out / "_spark_metadata").is_dir():
            return False
        progress = [json.loads(line) for line in _committed(out, "progress")]
        return max((p["rows_read"] for p in progress), default=0) == rows

    try:
        _wait_for(all_read, "the rows sent were not all read", follow)
        follow.send_signal(signal.SIGTERM)
        assert follow.wait(timeout=BOUND) == 0, follow.stderr.read().decode()
    finally:
        done.set()
        follow.kill()
        follow.wait()
        server.close()
    batch = (tmp_path / "batch" / "matches" / "part-00000.jsonl").read_text().splitlines()
    assert Counter(_committed(out, "matches")) == Counter(batch) and len(batch) > 100
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["rows_read"] == rows and metrics["stream"]["stopped_by_signal"]


def test_a_socket_nobody_serves(tmp_path):
    """Connection refused: one error line naming the address, exit 2, the output left empty
    (the sink had committed nothing)."""
    plan = tmp_path / "plan.json"
    _cepplan("optimize", FRAUD / "workload.json", "-o", plan, "-q")
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "cepplan", "run", plan, "--follow", f"tcp://127.0.0.1:{port}",
         "-o", out, "--engine", "spark", "--master", "local[2]", "-q"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=BOUND)
    errors = [line for line in done.stderr.decode().splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in done.stderr.decode()
    assert errors == [f"error: tcp://127.0.0.1:{port}: cannot connect: Connection refused"]
    assert list(out.iterdir()) == []
