"""The benchmarks' CPU count (`benchmarks/tree_cpu.py`) includes the processes that
`getrusage(RUSAGE_CHILDREN)` never sees: children of a parent that ignores SIGCHLD (as PySpark's
worker daemon does) and orphans that outlive the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BURN = 0.4  # CPU seconds each worker spends

# a parent that ignores SIGCHLD forks a worker (its times are discarded by the kernel), and
# a worker left behind as an orphan; each writes the CPU seconds it spent (the reference)
COMMAND = f"""
import os, signal, sys, time
def burn(path):
    start = time.process_time()
    while time.process_time() - start < {BURN}:
        pass
    time.sleep(0.3)  # idle, as Spark's workers are once their task is done
    with open(path, "w") as handle:
        handle.write(str(time.process_time()))
    os._exit(0)
if os.fork() == 0:  # the orphan: its parent exits at once
    if os.fork() == 0:
        burn(sys.argv[1] + "/orphan")
    os._exit(0)
os.wait()
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
if os.fork() == 0:
    burn(sys.argv[1] + "/ignored")
try:
    os.wait()  # with SIGCHLD ignored: returns ECHILD once the worker has ended
except ChildProcessError:
    pass
"""
COUNTER = ("import json, sys\nfrom benchmarks.tree_cpu import run_counted\n"
           "done = run_counted(sys.argv[1:])\n"
           "print(json.dumps({'cpu': done.cpu, 'returncode': done.returncode}))\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_counts_workers_whose_times_the_kernel_discards_and_orphans(tmp_path):
    done = subprocess.run([sys.executable, "-c", COUNTER, sys.executable, "-c", COMMAND,
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    counted = json.loads(done.stdout)
    spent = sum(float((tmp_path / name).read_text()) for name in ("orphan", "ignored"))
    assert counted["returncode"] == 0
    assert spent >= 2 * BURN
    assert counted["cpu"] >= spent
