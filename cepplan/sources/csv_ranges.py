"""A CSV file cut into byte ranges aligned on lines, with the rows before each: the Spark
job's range-local tasks and the in-process engine's workers each read one range of a
time-ordered file (and the neighbouring lines their matches need) by themselves.
"""

from __future__ import annotations

import itertools
import mmap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

_COUNT_BYTES = 1 << 20  # bytes compared at once
_NEWLINE, _RETURN = ord("\n"), ord("\r")


@dataclass(frozen=True)
class Region:
    """One task's lines: bytes [start, end) of the file, `rows` rows (non-blank lines) and
    `before` rows ahead of them; `data_start` is where the file's rows begin (past a header)."""

    number: int
    path: str
    start: int
    end: int
    data_start: int
    size: int
    before: int
    rows: int
    names: tuple[str, ...]
    last: bool


def line_regions(path: str, names: Sequence[str], header: bool, starts: Sequence[int]
                 ) -> list[Region] | None:
    """The file's ranges from each of `starts` (moved on to a line start) to the next, with
    the rows before each (lines counted here); None when the
    file's line ends are not plain `\\n` or `\\r\\n`."""
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        data_start = 0
        if header:
            handle.seek(0)
            handle.readline()
            data_start = handle.tell()
        bounds = [max(data_start, line_start(handle, s)) for s in starts] + [size]
        counts = [count_rows(handle, a, b) for a, b in itertools.pairwise(bounds)]
    if any(c is None for c in counts):
        return None
    before = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
    return [Region(i, path, bounds[i], bounds[i + 1], data_start, size, before[i], counts[i],
                   tuple(names), i == len(starts) - 1) for i in range(len(starts))]


def line_start(handle: BinaryIO, position: int) -> int:
    """The first line start at or after `position`."""
    if position <= 0:
        return 0
    handle.seek(position - 1)
    if handle.read(1) == b"\n":
        return position
    handle.readline()
    return handle.tell()


def count_rows(handle: BinaryIO, start: int, end: int) -> int | None:
    """The lines in the whole lines of bytes [start, end): the CSV reader's rows unless some
    are blank (the readers check); None if a lone `\\r` may end a line (the reader would
    split there). Counted on the file's mapped pages, a slice at a time (reading them into
    fresh buffers cost the page faults of a copy of the file)."""
    if end <= start:
        return 0
    with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        text = np.frombuffer(mapped, np.uint8)
        try:
            rows = 0
            for low in range(start, end, _COUNT_BYTES):
                part = text[low:min(end, low + _COUNT_BYTES)]
                rows += int(np.count_nonzero(part == _NEWLINE))
                returns = np.flatnonzero(part == _RETURN)
                if len(returns) and not _returns_end_lines(text, returns + low):
                    return None
            return rows + int(text[end - 1] != _NEWLINE)
        finally:
            del text, part  # the mapping closes only once no array views it


def _returns_end_lines(text: np.ndarray, returns: np.ndarray) -> bool:
    """Whether each carriage return at `returns` is followed by a line feed."""
    after = returns + 1
    return bool(np.all(after < len(text)) and np.all(text[after] == _NEWLINE))


def header_columns(path: str) -> list[str]:
    """The column names on the file's first non-blank line (`input_files.header_names`);
    `LineTooLong` when that line passes the reader's limit."""
    from cepplan.sources.text_input import first_line, open_text
    from cepplan.workload.input_files import header_names

    line = first_line(open_text(path))
    return header_names(line) if line is not None else []
