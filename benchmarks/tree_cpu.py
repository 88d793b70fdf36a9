"""CPU seconds of a command and of every process it starts, Spark's Python workers included.

`getrusage(RUSAGE_CHILDREN)` counts a process only once its parent has waited for it, and the
kernel discards the times of children whose parent ignores SIGCHLD, as PySpark's worker daemon
does: a Spark run's Python workers (most of its work) never reach the caller's figure. So the
caller becomes the run's subreaper (orphans are waited for by it, not by init), and the
processes whose parent ignores SIGCHLD are sampled from /proc while they run, each one's CPU
seconds as last seen added to the rusage figure. Linux only.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

_SUBREAPER = 36  # prctl(PR_SET_CHILD_SUBREAPER)
_SIGCHLD_BIT = 1 << 16  # SIGCHLD (17) in /proc/PID/status's SigIgn mask
_TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.05
ORPHAN_SECONDS = 60  # how long processes left behind may take to end before they are left


@dataclass(frozen=True)
class Counted:
    """One finished command: its exit code, wall seconds, and CPU seconds (user + system) of
    it and every process it started."""

    returncode: int
    wall: float
    cpu: float


def run_counted(command: Sequence[str], **popen) -> Counted:
    """Run `command` (`subprocess.Popen` keyword arguments `popen`) to its end and the end
    of every process it left behind; what it cost."""
    ctypes.CDLL(None, use_errno=True).prctl(_SUBREAPER, 1, 0, 0, 0)
    before = _reaped()
    lost: dict[int, float] = {}
    start = time.perf_counter()
    child = subprocess.Popen(command, **popen)
    while child.poll() is None:
        _sample_lost(lost)
        time.sleep(SAMPLE_SECONDS)
    wall = time.perf_counter() - start
    deadline = time.monotonic() + ORPHAN_SECONDS  # e.g. Spark's worker daemon, after the JVM
    while _orphans_left() and time.monotonic() < deadline:
        _sample_lost(lost)
        time.sleep(SAMPLE_SECONDS)
    return Counted(child.returncode, wall, _reaped() - before + sum(lost.values()))


def _reaped() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _orphans_left() -> bool:
    """Wait for any orphan that ended; whether some are still running."""
    try:
        pid, _status = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return pid == 0 or _orphans_left()


def _sample_lost(lost: dict[int, float]) -> None:
    """Note the CPU seconds so far of each of our descendants whose parent ignores SIGCHLD
    (the kernel will discard them when they end)."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                table[int(name)] = found
    ours, ignoring = {os.getpid()}, {}
    added = True
    while added:
        added = False
        for pid, (parent, _cpu) in table.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                added = True
    for pid, (parent, cpu) in table.items():
        if pid in ours and parent != os.getpid():
            if parent not in ignoring:
                ignoring[parent] = _ignores_sigchld(parent)
            if ignoring[parent]:
                lost[pid] = max(cpu, lost.get(pid, 0.0))


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def _ignores_sigchld(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as handle:
            mask = next(line.split()[1] for line in handle if line.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return False
    return bool(int(mask, 16) & _SIGCHLD_BIT)
