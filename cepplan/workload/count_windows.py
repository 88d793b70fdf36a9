"""Count windows, `"within": "100 events"` (CORE's `WITHIN 100 EVENTS`): a match's first and
last events lie at most N positions apart among its partition's events, numbered in time
order (timestamp, then id). Read here, with what a count window cannot be combined with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cepplan.workload.model import NEGATED, Operand

MAX_WINDOW_EVENTS = 1_000_000  # positions apart: beyond it a window holds more than one pass can

_COUNT = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)\s*events?\s*$")


class CountWindowError(ValueError):
    """A count window that cannot be read, or that is out of range."""


def is_count_window(value: object) -> bool:
    """Whether `within` is written as a number of events (`"100 events"`)."""
    return isinstance(value, str) and _COUNT.match(value) is not None


def parse_count_window(value: str) -> int:
    """The number of positions a match may span, a whole number from 1 to the limit."""
    match = _COUNT.match(value)
    text = match.group(1) if match else ""
    try:
        number = float(text)
    except ValueError:
        raise CountWindowError(f"cannot read {value!r:.40}: write a whole number of events, "
                               "e.g. '100 events'") from None
    if number != int(number) or number < 1:
        raise CountWindowError(f"a count window is a whole number of events from 1 to "
                               f"{MAX_WINDOW_EVENTS}, got {value!r:.40}")
    if number > MAX_WINDOW_EVENTS:
        raise CountWindowError(f"{value!r:.40} is more than the largest count window, "
                               f"{MAX_WINDOW_EVENTS} events")
    return int(number)


def count_window_problem(operator: str, operands: Sequence[Operand], contexts: bool,
                         emits: bool) -> str:
    """Why a pattern cannot have a count window ("" when it can): the context stage and the
    patterns that bind another's matches reason in time; a negation at a SEQ's edge or in an
    AND reaches to the window's edge, which positions do not bound in time."""
    if contexts:
        return "count windows (\"N events\") are not supported in a workload with contexts"
    if emits:
        return "a pattern with a count window cannot be bound by another pattern: drop \"emit\""
    negated = [i for i, o in enumerate(operands) if o.kind == NEGATED]
    required = [i for i, o in enumerate(operands)  # bound by every match
                if o.kind != NEGATED and not o.optional and o.min_count != 0]
    if negated and (operator != "SEQ" or not required or negated[0] < required[0]
                    or negated[-1] > required[-1]):
        return ("with a count window a NOT must stand between two positive operands of a SEQ "
                "that every match binds (a negation at the edge reaches to the window's edge)")
    return ""
