"""Checks of command-line values and paths where they enter, before any work starts.

Every failure is an `InputError` naming the option (or the file) and the problem, so the CLI
prints one line and exits with code 2 — the same shape as every other input error.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from cepplan.errors import InputError

MIN_TIME_LIMIT = 0.001  # seconds; the search's share of a subnormal limit rounded to 0 s
MAX_K = 1000  # plans each pattern offers the patterns built on it (0: all of them)
MAX_WORKERS = 256  # worker processes of the in-process engine (`cepplan run --workers`)


def bounded(option: str, value: float, *, low: float, high: float,
            inclusive: bool = False) -> float:
    """`value` if it is finite, above `low` (at least `low` when `inclusive`) and at most
    `high`; otherwise an `InputError` for `option`."""
    above = value >= low if inclusive else value > low
    if not (math.isfinite(value) and above and value <= high):
        floor = f"at least {low:g}" if inclusive else f"above {low:g}"
        raise InputError.single(option, "", f"must be a finite number {floor} and at most "
                                f"{high:g}, got {value:g}")
    return value


def at_least(option: str, value: int, low: int, high: int | None = None) -> int:
    """`value` if it is an integer from `low` (to `high`); otherwise an `InputError`."""
    if value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise InputError.single(option, "", f"must be {span}, got {value}")
    return value


def check_readable(path: str | Path, what: str = "file") -> None:
    """An input that exists and can be read; tells "not found" from "cannot read"."""
    path = Path(path)
    try:
        path.stat()
    except FileNotFoundError:
        raise InputError.single(str(path), "", f"{what} not found (no such file or "
                                "directory)") from None
    except OSError as exc:
        raise InputError.single(str(path), "", f"cannot read: {exc.strerror.lower()}") from None
    if not os.access(path, os.R_OK):
        raise InputError.single(str(path), "", "cannot read: permission denied")
