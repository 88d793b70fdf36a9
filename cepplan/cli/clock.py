"""When the running command began, for the limits that count from it (`optimize
--time-limit`): a `cepplan` process's own start, so that Python's start-up and the imports,
slow on a busy machine, count too."""

from __future__ import annotations

import os
import time

# a process older than this was not started for the command asking (a test runner, a
# service): its command counts from when it asks
FRESH_PROCESS = 10.0


def command_started() -> float:
    """The `time.perf_counter()` time the running command began."""
    now = time.perf_counter()
    age = process_age()
    return now - age if age is not None and age < FRESH_PROCESS else now


def process_age() -> float | None:
    """Seconds since this process started (Linux's /proc), None where that is unknown."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after "pid (name)"
        with open("/proc/uptime") as uptime:
            now = float(uptime.read().split()[0])
        return max(0.0, now - int(fields[19]) / os.sysconf("SC_CLK_TCK"))  # starttime
    except (OSError, ValueError, IndexError):
        return None
