"""Load test of `cepplan serve` on loopback: 50 concurrent clients send 1,000 optimize
requests of the bundled examples — once with identical requests (the answer cache serves
them) and once with a fresh seed each (every request planned) — while a poller times the
health endpoint. Prints errors, p50/p99 latency, health p99 and the server's memory.

Bounded in count and time: each phase stops after its requests or 300 s, whichever first.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "workload.json").exists())
CLIENTS = 50
PHASE_SECONDS = 300.0


def main(quick: bool = False) -> None:
    requests = 200 if quick else 1000
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "cepplan", "serve", "--port", str(port),
                               "--workers", "2", "-q"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_healthy(port)
        workloads = [json.loads((p / "workload.json").read_text()) for p in EXAMPLES]
        print(f"{CLIENTS} clients, {requests} optimize requests per phase over "
              f"{len(workloads)} bundled examples, server with 2 planning processes")
        print(f"{'phase':<22} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} "
              f"{'health p99 ms':>14} {'RSS MiB start/end':>18}")
        for phase, fresh in (("identical (cached)", False), ("fresh seed (planned)", True)):
            bodies = [json.dumps({"workload": workloads[i % len(workloads)],
                                  "settings": {"seed": i if fresh else 0}}).encode()
                      for i in range(requests)]
            start_rss = _rss_mib(server.pid)
            result = _phase(port, bodies)
            print(f"{phase:<22} {result['errors']:>6} {result['p50']:>8.1f} "
                  f"{result['p99']:>8.1f} {result['rate']:>8.1f} {result['health_p99']:>14.1f} "
                  f"{start_rss:>8.0f}/{_rss_mib(server.pid):<8.0f}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _phase(port: int, bodies: list[bytes]) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    health: list[float] = []
    stop = threading.Event()

    def poll_health() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            status = _send(port, "GET", "/v1/health", None)
            health.append(time.perf_counter() - start if status == 200 else float("inf"))
            stop.wait(0.02)

    def one(body: bytes) -> tuple[int, float]:
        if time.perf_counter() > deadline:
            return -1, 0.0
        start = time.perf_counter()
        return _send(port, "POST", "/v1/optimize", body), time.perf_counter() - start

    poller = threading.Thread(target=poll_health)
    deadline = time.perf_counter() + PHASE_SECONDS
    began = time.perf_counter()
    poller.start()
    with ThreadPoolExecutor(CLIENTS) as clients:
        for status, took in clients.map(one, bodies):
            if status == 200:
                latencies.append(took)
            else:
                errors += 1
    elapsed = time.perf_counter() - began
    stop.set()
    poller.join()
    ms = np.array(latencies or [0.0]) * 1000
    return {"errors": errors, "p50": float(np.percentile(ms, 50)),
            "p99": float(np.percentile(ms, 99)), "rate": len(latencies) / elapsed,
            "health_p99": float(np.percentile(np.array(health) * 1000, 99))}


def _send(port: int, method: str, path: str, body: bytes | None) -> int:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return 0


def _rss_mib(pid: int) -> float:
    """Resident memory of the server and its worker processes."""
    total = 0
    pids = [pid, *_children(pid)]
    for one in pids:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if _send(port, "GET", "/v1/health", None) == 200:
            return
        time.sleep(0.2)
    raise RuntimeError("the server did not start within 60 s")
