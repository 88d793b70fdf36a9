"""Text for a terminal: names and texts that come from users' files (workload, context, operator
and query names, string literals in predicates, values in event data) are printed with their
control characters made visible, so a name cannot set the clipboard (OSC 52), retitle the
window, move the cursor or hide text (docs/reliability.md, "Names on a terminal").

Standalone (standard library only): the generated Spark job ships it in its runtime zip.
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cepplan.errors import Problem

# C0 controls but tab and newline, DEL, C1 controls (0x9b is CSI, 0x9d OSC), the line and
# paragraph separators, and the bidirectional overrides that reorder what a reader sees
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e"
                      "\u2066-\u2069]")
_CONTROL_OR_NEWLINE = re.compile(f"\n|{_CONTROL.pattern}")


def printable(text: str, *, lines: bool = True) -> str:
    """`text` with every control character written as a visible escape (`\\x1b`, `\\u202e`):
    an escape sequence loses its ESC and prints as plain text. Tabs stay; newlines stay when
    `lines` (a message of several lines), else they are escaped too (a table cell, a name)."""
    pattern = _CONTROL if lines else _CONTROL_OR_NEWLINE
    return pattern.sub(_escape, str(text))


def counted(count: int, noun: str) -> str:
    """`1 pattern`, `3 patterns`: a count with its noun in the right number."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def echo(text: object = "", *, err: bool = False, lines: bool = True) -> None:
    """Print `text` made `printable` (see there for `lines`) on stdout (stderr with `err`)."""
    stream = sys.stderr if err else sys.stdout
    print(printable(str(text), lines=lines), file=stream, flush=True)


def warn(text: str) -> None:
    """Print `warning: TEXT` on stderr, a line of its own (newlines in names escaped)."""
    echo(f"warning: {text}", err=True, lines=False)


def problem_text(problem: Problem) -> str:
    """`error: FILE: PLACE: PROBLEM` made printable, a newline in a quoted name escaped; the
    predicate excerpt under it keeps its lines."""
    head = printable("error: " + replace(problem, excerpt="").render(), lines=False)
    return "\n".join([head, *(printable(f"    {line}", lines=False)
                              for line in problem.excerpt.splitlines())])


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
