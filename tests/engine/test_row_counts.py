"""The rows before each byte range of a CSV file (`csv_ranges.count_rows`), counted on the
file's mapped pages, against Python's own line splitting of the same bytes."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.sources.csv_ranges import count_rows, line_start

LINES = st.lists(st.tuples(st.text("ab,1", max_size=6), st.sampled_from(["\n", "\r\n", "\r"])),
                 min_size=1, max_size=40)


def _expected(whole: bytes, start: int, end: int) -> int | None:
    """Lines in [start, end) by `bytes.splitlines`; None when a carriage return there is
    not followed by a line feed (a reader would end a line at it)."""
    if any(m.start() < end - start for m in re.finditer(rb"\r(?!\n)", whole[start:end + 1])):
        return None
    return len(whole[start:end].splitlines())


@settings(max_examples=200, deadline=None)
@given(LINES, st.booleans(), st.data())
def test_rows_counted_as_python_splits_the_lines(lines, ends_open, data):
    text = "".join(body + end for body, end in lines)
    if ends_open:
        text += "tail"
    whole = text.encode()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "events.csv"
        path.write_bytes(whole)
        with open(path, "rb") as handle:
            cuts = sorted(data.draw(st.lists(st.integers(0, len(whole)), min_size=2,
                                             max_size=2)))
            start, end = (line_start(handle, cut) for cut in cuts)
            assert count_rows(handle, start, end) == _expected(whole, start, end)
