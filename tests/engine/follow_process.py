"""`cepplan run --follow ... --checkpoint DIR` as a process of its own, stopped by a signal
once its checkpoint records a followed file: the first half of a restart test."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from cepplan.engine_adapter.local.checkpoint import recorded_files


def follow_until_recorded(args: list[str], checkpoint: Path, signum: int) -> int:
    """Start `cepplan ARGS...`, send `signum` once `checkpoint` records a file read; the
    process's exit code."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    follow = subprocess.Popen([sys.executable, "-m", "cepplan", *args], env=env,
                              stderr=subprocess.PIPE)
    try:
        while len(recorded_files(checkpoint)) < 1:
            assert follow.poll() is None, follow.stderr.read().decode()
            time.sleep(0.01)
        follow.send_signal(signum)
        return follow.wait(timeout=60)
    finally:
        follow.kill()
