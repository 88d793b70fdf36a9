"""When the running command began, for the limits that count from it (`optimize
--time-limit`): a `cepplan` process's own start, so that Python's start-up and the imports,
slow on a busy machine, count too."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def command_started() -> float:
    """The `time.perf_counter()` time the running command began: the process's start when
    it was started to run cepplan, else now (a test runner or another program calling the
    command in its own process: its start-up was not the command's)."""
    now = time.perf_counter()
    age = process_age() if started_for_cepplan() else None
    return now - age if age is not None else now


def started_for_cepplan() -> bool:
    """Whether this process's main program is cepplan's: the `cepplan` console script or
    `python -m cepplan`."""
    path = Path(getattr(sys.modules.get("__main__"), "__file__", None) or "")
    return path.name == "cepplan" or (path.name == "__main__.py"
                                      and path.parent.name == "cepplan")


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
