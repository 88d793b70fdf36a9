"""`cepplan serve` on an address it cannot listen on: one error naming the option, exit code 2,
before any planning process starts (uvicorn logged an error and exited 1 or 3); and `--port 0`
still prints the port it got."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

import pytest

from tests.service.serving import ROOT, START_SECONDS, request

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _serve(*options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cepplan", "serve", *options],
                          capture_output=True, text=True, timeout=120, env=ENV)


def test_a_port_in_use_is_one_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve("--port", str(port))
    assert done.returncode == 2
    assert done.stderr == f"error: --port: port {port} on 127.0.0.1 is in use (another " \
        "server?): choose another --port\n"


@pytest.mark.parametrize(("host", "problem"), [
    ("999.1.1.1", "cannot listen on '999.1.1.1': "),
    ("192.0.2.1", "cannot listen on 192.0.2.1 port 0: "),  # TEST-NET-1: no machine's own
])
def test_a_host_the_server_cannot_listen_on_is_one_error(host, problem):
    done = _serve("--host", host, "--port", "0")
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: --host: {problem}") and \
        done.stderr.count("\n") == 1, done.stderr


def test_port_0_prints_the_port_it_got_and_answers_there():
    process = subprocess.Popen([sys.executable, "-m", "cepplan", "serve", "--port", "0",
                                "--workers", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=ENV)
    try:
        port = None
        for line in process.stdout:
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found[1])
                break
        assert port and port > 0
        assert request(port, "GET", "/v1/health", token=None)[0] == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=START_SECONDS) == 0
