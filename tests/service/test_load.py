"""`cepplan serve` under hostile load on loopback: one client, slow or expensive on purpose,
must not take the service down (issue 31).

One real server, 2 workers, `--max-time-limit 2` (a request's worker is stopped 2 + 5 s after
it starts), a 256-descriptor limit, and at once: a client pinging health, 300 connections that
send nothing or half a request head, a 16 MiB header, 100,000 headers, a body that never
comes, a client that never reads its answers, an abandoned expensive request, two expensive
requests, workers killed while planning, a sweep of wrong-typed settings, a request the HTTP
parser refuses and a report page drawing `$` names; then SIGTERM with an expensive request
under way. Bounded: about 330 connections, 60 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.hostile_workloads import traffic_named
from tests.processes import children
from tests.service.serving import (
    ROOT,
    VALUES,
    accepted_settings,
    post,
    request,
    running_server,
    workload,
)

FILES = 256  # the server's open-file limit
IDLE_CLIENTS = 300
MAX_TIME_LIMIT = 2
PLANNING_SECONDS = MAX_TIME_LIMIT + 5  # docs/service.md: the server's limit plus 5 s
HEAD_SECONDS = 10  # docs/service.md: a request head must arrive within 10 s
STALL_SECONDS = 10  # docs/service.md: an answer nobody takes for 10 s ends the connection
GRACE = 2  # --shutdown-grace
# Margins for a machine at load 8: the server reacts on its event loop (milliseconds when
# idle); these bound scheduling delays, never the work itself.
LATE = 10.0
HEALTH_SECONDS = 2.0
SETTINGS = accepted_settings(MAX_TIME_LIMIT)
TCP_CLOSED_STATES = (7, 8)  # TCP_CLOSE (reset), TCP_CLOSE_WAIT (closed by the server)


def consumer_workload(size: int = 800_000) -> dict:
    """The mobile example with queries added until it is `size` bytes of JSON (under the
    1 MiB body limit): its covering takes minutes, whatever the time limit asks."""
    raw = workload("mobile")
    queries, rng = raw["consumers"]["queries"], random.Random(31)
    grown, length = [], 0
    while length < size:
        query = dict(queries[len(grown) % len(queries)], id=f"car-{len(grown)}")
        query["track"] = [[10.0 * t, rng.uniform(0, 2000), rng.uniform(0, 2000)]
                          for t in range(12)]
        grown.append(query)
        length += len(json.dumps(query))
    raw["consumers"]["queries"] = grown
    return raw


class HealthPinger(threading.Thread):
    """Asks for health on a new connection every 0.1 s, timing each answer."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.waits: list[float] = []
        self.failures: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            start = time.perf_counter()
            try:
                status = request(self.port, "GET", "/v1/health", timeout=30)[0]
                if status != 200:
                    self.failures.append(f"status {status}")
            except OSError as err:
                self.failures.append(repr(err))
            self.waits.append(time.perf_counter() - start)
            self.done.wait(0.1)


def _raw_exchange(port: int, data: bytes, answers: list) -> None:
    """Send `data` while reading; the answer's status line (or how it ended) to `answers`."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        got = bytearray()
        reader = threading.Thread(target=_read_all, args=(sock, got), daemon=True)
        reader.start()
        with contextlib.suppress(OSError):  # the server refused the head, closed: read below
            sock.sendall(data)
        reader.join(60)
    answers.append(bytes(got).split(b"\r\n", 1)[0])


def _read_all(sock: socket.socket, into: bytearray) -> None:
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            into += chunk


def _never_reading(port: int, outcome: dict) -> None:
    """Ask for 400 OpenAPI documents (10 MB) and take none: how long until the server ends
    the connection."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 400)
    start = time.monotonic()
    while time.monotonic() - start < STALL_SECONDS + 4 * LATE:
        state = struct.unpack("B", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0]
        if state in TCP_CLOSED_STATES:
            outcome["closed after"] = time.monotonic() - start
            break
        time.sleep(0.2)
    sock.close()


def _abandon(port: int, body: bytes) -> float:
    """Send an expensive request, close the connection once it plans; seconds until the
    server has stopped its planning."""
    before = _health(port)["stopped"]
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"POST /v1/optimize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    while _health(port)["planning"] < 1:
        time.sleep(0.05)
    sock.close()
    start = time.monotonic()
    while _health(port)["stopped"] == before:
        time.sleep(0.05)
    return time.monotonic() - start


def _health(port: int) -> dict:
    return json.loads(request(port, "GET", "/v1/health", timeout=30)[2])


def _until_idle(port: int, workers: int) -> None:
    """Wait until `workers` planning processes are ready (a replaced one imports the planner
    first): at most the time the server allows a worker to start."""
    deadline = time.monotonic() + 300
    while _health(port)["idle"] < workers and time.monotonic() < deadline:
        time.sleep(0.05)


def _expensive(port: int, body: bytes, results: list) -> None:
    start = time.monotonic()
    status, headers, answer = request(port, "POST", "/v1/compare", body, timeout=120)
    results.append((status, headers.get("content-type"), json.loads(answer),
                    time.monotonic() - start, time.monotonic()))


def _kill_workers(port: int, server: int, body: bytes, answers: list) -> float:
    """SIGKILL every planning process (as the OOM killer might) while one plans an expensive
    request: seconds until both are back and a request is answered."""
    thread = threading.Thread(target=_expensive, args=(port, body, answers))
    thread.start()
    while _health(port)["planning"] < 1:
        time.sleep(0.05)
    for pid in children(server):
        if "multiprocessing.spawn" in _command(pid):
            os.kill(pid, signal.SIGKILL)
    start = time.monotonic()
    thread.join()
    assert post(port, "/v1/validate", {"workload": workload()})[0] == 200
    _until_idle(port, 2)
    return time.monotonic() - start


def _sweep_wrong_settings(port: int) -> int:
    """Wrong-typed settings, each a 422 problem document naming the setting."""
    seen = []

    @settings(max_examples=60, database=None,
              suppress_health_check=list(HealthCheck))
    @given(name=st.sampled_from(sorted(SETTINGS)), value=VALUES)
    def refused(name, value):
        assume(not SETTINGS[name](value))
        status, headers, body = post(port, "/v1/optimize", {
            "workload": workload(), "settings": {name: value}})
        assert status == 422, (name, value, status, body[:300])
        assert headers["content-type"] == "application/problem+json"
        assert [p["path"] for p in json.loads(body)["problems"]] == [f"settings.{name}"]
        seen.append(name)

    refused()
    return len(seen)


def _unparsable(port: int) -> bytes:
    answers: list = []
    _raw_exchange(port, b"POST /v1/optimize HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"application/json\r\nContent-Length: -1\r\n\r\n{}", answers)
    return answers[0]


def _running(pids: set[int]) -> list[int]:
    """Those of `pids` still running (a zombie has ended)."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            running.append(pid)
    return running


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES))


def _idle_closed(sock: socket.socket, opened: float) -> bool:
    """The server closed the idle connection (with or without a 408) by its head time."""
    sock.settimeout(max(0.1, opened + HEAD_SECONDS + LATE - time.monotonic()))
    try:
        answer = sock.recv(65536)
    except TimeoutError:
        return False
    except OSError:
        return True  # reset
    return answer == b"" or answer.startswith(b"HTTP/1.1 408")


def test_hostile_clients_do_not_take_the_service_down(tmp_path):
    """Health answers throughout (within HEALTH_SECONDS: the issue's target is 1 s, the
    margin is for a machine at load 8, where the pinging thread itself may wait for a core);
    every expensive request is cut at the server's limit and its worker is free again;
    greedy heads get 431, slow heads and bodies 408 or a close, a client that takes nothing of its
    answer is disconnected; every wrong-typed setting is a 422 problem document; and SIGTERM
    ends the server within its grace period, exit code 0, with no worker left."""
    expensive = json.dumps({"workload": consumer_workload(),
                            "settings": {"time_limit": MAX_TIME_LIMIT}}).encode()
    assert 700_000 < len(expensive) < 1 << 20
    figures: dict = {}
    with running_server(tmp_path, "--workers", "2", "--max-time-limit", str(MAX_TIME_LIMIT),
                        "--shutdown-grace", str(GRACE),
                        preexec_fn=_limit_files) as (server, port):
        workers = children(server.pid)
        pinger = HealthPinger(port)
        pinger.start()
        idle = []
        for number in range(IDLE_CLIENTS):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            if number % 2:
                sock.sendall(b"POST /v1/optimize HTTP/1.1\r\nHost: x\r\nContent-Le")
            idle.append((sock, time.monotonic()))
        heads: list = []
        greedy = [threading.Thread(target=_raw_exchange, args=(port, data, heads))
                  for data in (b"GET /v1/health HTTP/1.1\r\nX-Big: " + b"a" * (16 << 20)
                               + b"\r\n\r\n",
                               b"GET /v1/health HTTP/1.1\r\n" + b"".join(
                                   b"X-%d: 1\r\n" % i for i in range(100_000)) + b"\r\n")]
        greedy.append(threading.Thread(target=_raw_exchange, args=(port, (
            b"POST /v1/validate HTTP/1.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{\"workload\""), heads)))
        stall: dict = {}
        greedy.append(threading.Thread(target=_never_reading, args=(port, stall)))
        for thread in greedy:
            thread.start()

        figures["abandoned: stopped after (s)"] = _abandon(port, expensive)
        _until_idle(port, 2)
        answers: list = []
        costly = [threading.Thread(target=_expensive, args=(port, expensive, answers))
                  for _ in range(2)]
        for thread in costly:
            thread.start()
        figures["wrong settings refused"] = _sweep_wrong_settings(port)
        unparsable = _unparsable(port)
        for thread in costly:
            thread.join()
        _until_idle(port, 2)
        figures["workers free again after the last 504 (s)"] = (
            time.monotonic() - max(answer[4] for answer in answers))
        assert post(port, "/v1/validate", {"workload": workload()})[0] == 200
        crashed: list = []
        figures["workers back after all were killed (s)"] = _kill_workers(
            port, server.pid, expensive, crashed)
        dollars = post(port, "/v1/compare", {
            "workload": traffic_named("traffic", "cong$\\undefinedmacro$", "exit"),
            "settings": {"time_limit": 1}}, headers={"Accept": "text/html"})
        for thread in greedy:
            thread.join(60)
        closed = [_idle_closed(sock, opened) for sock, opened in idle]
        for sock, _ in idle:
            sock.close()

        live: list = []
        last = threading.Thread(target=_expensive, args=(port, expensive, live))
        last.start()
        while _health(port)["planning"] < 1:
            time.sleep(0.05)
        pinger.done.set()
        pinger.join()
        workers |= children(server.pid)
        stop = time.monotonic()
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=GRACE + 60)
        figures["SIGTERM to exit (s)"] = time.monotonic() - stop
        last.join()

    waits = sorted(pinger.waits)
    figures.update({"health checks": len(waits), "health p50 (s)": statistics.median(waits),
                    "health max (s)": waits[-1], "health failures": len(pinger.failures),
                    "time to 504 (s)": [a[3] for a in answers],
                    "never-reading client closed after (s)": stall.get("closed after"),
                    "exit code": code})
    print("\nload figures:", json.dumps(figures, indent=1, default=str))

    assert not pinger.failures, pinger.failures[:5]
    assert waits[-1] < HEALTH_SECONDS, figures
    assert figures["abandoned: stopped after (s)"] < LATE
    status, media, problem, _, _ = crashed[0]
    assert (status, media, problem["status"]) == (500, "application/problem+json", 500)
    assert "planning process ended" in problem["detail"]
    for status, media, problem, elapsed, _ in answers:
        assert (status, media, problem["status"]) == (504, "application/problem+json", 504)
        assert PLANNING_SECONDS <= elapsed < PLANNING_SECONDS + LATE
    assert sorted(heads) == [b"HTTP/1.1 408 Request Timeout",  # the body that never came
                             *[b"HTTP/1.1 431 Request Header Fields Too Large"] * 2]
    assert stall.get("closed after", 1e9) < STALL_SECONDS + LATE
    assert unparsable == b"HTTP/1.1 400 Bad Request"
    # the report that once crashed a worker: answered, or cut at this server's 2 s limit on a
    # busy machine (test_service.py checks the report itself, without that limit)
    assert dollars[0] == 504 or (dollars[0] == 200 and b"cong$\\undefinedmacro$" in dollars[2])
    assert all(closed), f"{closed.count(False)} idle connections still open"
    assert code == 0 and figures["SIGTERM to exit (s)"] < GRACE + LATE
    status, media, problem, _, _ = live[0]
    assert (status, media, problem["status"]) == (503, "application/problem+json", 503)
    deadline = time.monotonic() + LATE
    while _running(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(workers), {pid: _command(pid) for pid in _running(workers)}


def test_an_open_file_limit_without_room_for_connections_is_refused(tmp_path):
    """With 40 files for the server's own (32 and 4 a worker), no connection would fit: one
    error line before listening, exit code 2."""
    def forty_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))

    done = subprocess.run([sys.executable, "-m", "cepplan", "serve", "--port", "0", "-q"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          preexec_fn=forty_files, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: <environment>: open-file limit: 40 files")
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_ctrl_c_stops_the_server_normally(tmp_path):
    """SIGINT (Ctrl-C) stops the service as SIGTERM does: exit code 0, no traceback, no
    planning process left."""
    with running_server(tmp_path, "--workers", "1", "--shutdown-grace", "1") as (server, _):
        workers = children(server.pid)
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=GRACE + LATE)
        errors = server.stderr.read().decode()
    assert code == 0 and "Traceback" not in errors, errors
    deadline = time.monotonic() + LATE
    while _running(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(workers)
