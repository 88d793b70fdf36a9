"""Lines of CSV text that would run on into the next: a quote left open at the line's end, or
a backslash escaping the line break. Spark reads every line alone; pyarrow's parser, given a
block of lines, ran such a field on to the block's end (the rows after it vanished), so the
CSV reader checks each block and parses around those lines, each one rejected and counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import numpy as np

from cepplan.workload.input_files import ESCAPED_LINE_BREAK, UNCLOSED_QUOTE_LINE

# Codes of a row's line problem, as the readers hand them on; their reasons in `LINE_PROBLEMS`.
GOOD, MALFORMED, UNCLOSED_QUOTE = 0, 1, 2
LINE_PROBLEMS = {MALFORMED: "malformed row", UNCLOSED_QUOTE: "unclosed quote"}

_UNCLOSED = re.compile(UNCLOSED_QUOTE_LINE.encode())
_ESCAPED_BREAK = re.compile(ESCAPED_LINE_BREAK.encode())
_BREAKS = b"\r\n"


def line_problem(line: bytes) -> int:
    """`UNCLOSED_QUOTE`, `MALFORMED` (a backslash before the line break) or `GOOD`, for one
    line without its line break."""
    if _UNCLOSED.match(line):
        return UNCLOSED_QUOTE
    return MALFORMED if _ESCAPED_BREAK.match(line) else GOOD


def first_unclosed_quote(blocks: Iterable[bytes]) -> int | None:
    """The 1-based number (blank lines counted, as an editor numbers them) of the first line
    of `blocks` (whole lines in order, the header included) leaving a quote open; None if
    none."""
    before = 0
    for block in blocks:
        lines = block.split(b"\n")
        for number, line in enumerate(lines):
            if b'"' in line and line_problem(line.rstrip(b"\r")) == UNCLOSED_QUOTE:
                return before + number + 1
        before += len(lines) - 1
    return None


def text_lines(block: bytes) -> int:
    """How many lines of `block` hold more than line breaks (`\\n`, `\\r`, `\\r\\n`, as
    pyarrow's parser ends lines): the rows a parse that keeps each line apart gives."""
    data = np.frombuffer(block, np.uint8)
    if not len(data):
        return 0
    breaks = (data == 10) | (data == 13)
    return int(np.count_nonzero(~breaks[1:] & breaks[:-1])) + int(not breaks[0])


def all_lines(block: bytes) -> int:
    """How many lines `block` has, blank ones included, counting `\\n` only (a fast count,
    equal to `text_lines` on blocks without blank lines or lone `\\r`)."""
    return block.count(b"\n") + (len(block) > 0 and not block.endswith(b"\n"))


def last_line(block: bytes) -> bytes:
    """The last line of `block` holding more than line breaks (b"" when none)."""
    end = len(block)
    while end and block[end - 1] in _BREAKS:
        end -= 1
    return block[max(block.rfind(b"\n", 0, end), block.rfind(b"\r", 0, end)) + 1:end]


def runs(block: bytes, header: int) -> Iterator[tuple[bytes, int, int]]:
    """`block` cut around its problem lines: (lines, `GOOD`, rows) for each run of good lines
    (with their line breaks), (the line, its problem, 1) for each other; rows are the lines
    holding more than blanks, the first `header` of them (good) not counted."""
    good: list[bytes] = []
    rows = 0
    for line in block.splitlines(keepends=True):
        text = line.rstrip(_BREAKS)
        filled = bool(text.strip())
        problem = line_problem(text) if filled and header <= 0 else GOOD
        if problem == GOOD:
            good.append(line)
            rows += filled and header <= 0
            header -= filled
            continue
        if good:
            yield b"".join(good), GOOD, rows
            good, rows = [], 0
        yield text, problem, 1
    if good:
        yield b"".join(good), GOOD, rows
