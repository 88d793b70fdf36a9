"""The matcher's memory budget (docs/engine.md, "Memory"): before a join step or a Kleene
expansion builds its rows, the bytes they and the matches found so far will take are
estimated from the counts in hand; when the process's resident memory plus that would pass
the budget, the run stops with `MatchMemoryError` naming the pattern, its window and the
figures, never an out-of-memory kill.

The budget is `CEPPLAN_MATCH_MEMORY` (bytes, or with a K, M, G or T suffix: the most resident
memory the process may reach) when set, else the process's resident memory when the first
partition is matched plus half the memory the machine has available then.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from cepplan.errors import CepplanError

if TYPE_CHECKING:
    from cepplan.engine_adapter.runtime.spec import PatternSpec

MEMORY_VARIABLE = "CEPPLAN_MATCH_MEMORY"
# per event bound in a match held until its partition's matches are rendered and written:
# 110 bytes measured (matches of 2 events of 5 fields, in-process engine, peak RSS per match);
# a complex event counts its own events and once more for itself (its text wraps theirs)
MATCH_BYTES = 128
# the matches of a pattern others read are held again, as complex events in their input
READ_COPIES = 2
# per event bound in a row being joined: its rank, the range expansion's index arrays and the
# copy a condition's filter makes (8 bytes each)
JOIN_BYTES = 32
# a join step builds at most this share of the budget left at a time (`row_budget`): its rows,
# the next steps' and the rendered matches of a piece queued for the writer share the rest
PIECE_SHARE = 8
# the rows of one piece: enough for NumPy to run at full speed, few enough that a piece's
# rendered matches (about 200 bytes each) stay a small part of any budget
MIN_PIECE_ROWS, MAX_PIECE_ROWS = 1 << 10, 1 << 20
FALLBACK_BUDGET = 4 << 30  # when the machine's available memory cannot be read
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class MatchMemoryError(CepplanError):
    """A partition's matching would pass the memory budget."""


def match_bytes(patterns: Sequence[PatternSpec]) -> dict[str, int]:
    """Per pattern (children before parents), the bytes one of its matches takes as held:
    `MATCH_BYTES` per event it carries, nested complex events unfolded (50 nested patterns:
    a match of the last carries 51 events), times `READ_COPIES` when another pattern reads
    its matches. Measured on a hierarchy of 11 (the peak within 1.5x of the estimate)."""
    units: dict[str, int] = {}
    read = {o.type for p in patterns for o in p.operands}
    sizes = {}
    for spec in patterns:
        units[spec.name] = sum(units[o.type] + 1 if o.type in units else 1
                               for o in spec.positive)
        copies = READ_COPIES if spec.name in read else 1
        sizes[spec.name] = units[spec.name] * MATCH_BYTES * copies
    return sizes


def budget() -> int:
    """The most resident memory the process may reach while matching, in bytes:
    `CEPPLAN_MATCH_MEMORY`, else what it held when first asked plus half the memory the
    machine had available then."""
    text = os.environ.get(MEMORY_VARIABLE, "").strip()
    return _given_budget(text) if text else _default_budget()


@lru_cache(maxsize=8)
def _given_budget(text: str) -> int:
    """`CEPPLAN_MATCH_MEMORY`'s bytes, read once per value (asked before every join step)."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text, re.IGNORECASE)
    if not found or not float(found[1]) > 0:
        raise MatchMemoryError(f"{MEMORY_VARIABLE}={text!r}: expected a positive number "
                               "of bytes, optionally with K, M, G or T (e.g. 2G)")
    return int(float(found[1]) * _UNITS[found[2].upper()])


@lru_cache(maxsize=1)
def _default_budget() -> int:
    return resident() + _available() // 2


def _available() -> int:
    """MemAvailable of /proc/meminfo, in bytes (FALLBACK_BUDGET * 2 where there is none)."""
    available = _proc_bytes("/proc/meminfo", "MemAvailable:")
    return 2 * FALLBACK_BUDGET if available is None else available


def _proc_bytes(path: str, key: str) -> int | None:
    """The `key` line of a /proc status file (`KEY:  N kB`) in bytes, None without it."""
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def resident() -> int:
    """The process's resident memory now, in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def row_budget(width: int) -> int:
    """The most rows of `width` events (as rows being joined and as matches to render) one
    piece of a join step may build: a `PIECE_SHARE` of the budget not yet resident, within
    [MIN_PIECE_ROWS, MAX_PIECE_ROWS] (`pieces`)."""
    per_row = width * (JOIN_BYTES + MATCH_BYTES)
    room = (budget() - resident()) // PIECE_SHARE
    return max(MIN_PIECE_ROWS, min(MAX_PIECE_ROWS, room // per_row))


def peak_resident() -> int:
    """The most resident memory this program has held so far, in bytes: Linux's `VmHWM`, the
    high-water mark of its own memory (`ru_maxrss` also counts the memory of the process that
    started it: a child started by a 600 MB parent reported 613 MB, its own peak being 14 MB);
    `ru_maxrss` where /proc is not there."""
    peak = _proc_bytes("/proc/self/status", "VmHWM:")
    if peak is not None:
        return peak
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def check(pattern: str, window: float | None, building: int, rows: int, what: str,
          unit: str = "time units") -> None:
    """MatchMemoryError when the process's resident memory plus `building` bytes (for `rows`
    new rows, `what` they are, and the matches found so far, to be rendered) would pass
    the budget; `unit`: the window's (`events` for a count window)."""
    limit = budget()
    now = resident()
    if now > limit:  # nothing this step builds is to blame: say what is
        raise MatchMemoryError(
            f"pattern {pattern}: matching one partition {window_text(window, unit)}: the "
            f"{size_text(now)} already in use (the events read and the matches held) pass "
            f"the matcher's memory budget of {size_text(limit)}: set {MEMORY_VARIABLE} "
            "higher (e.g. 8G), or add a partition key or read fewer events at once")
    if now + building > limit:
        raise MatchMemoryError(
            f"pattern {pattern}: one partition {window_text(window, unit)} would build about "
            f"{rows:,} {what}; with the matches found so far they would take about "
            f"{size_text(building)} on top "
            f"of the {size_text(now)} in use, more than the matcher's memory budget of "
            f"{size_text(limit)}: narrow the window, add conditions or a partition key, or set "
            f"{MEMORY_VARIABLE} (e.g. 8G) on a machine with more memory")


def window_text(window: float | None, unit: str) -> str:
    """A pattern's window as messages say it."""
    return f"within its window of {window:g} {unit}" if window is not None \
        else "with no window"


def size_text(count: int) -> str:
    """Bytes as messages say them (`1.5 GiB`)."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0]]
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
