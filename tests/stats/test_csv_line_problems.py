"""CSV lines that leave a quote open (or escape their line break) against Python's csv module:
each such line is one row rejected as `unclosed quote` (or `malformed row`) at its own
position, every other line is the row the csv module reads from it alone — whatever block
the line falls in (a quote once ran on to the end of its read block, the rows after it lost).
JSON lines with an unclosed string, a header-only file and a last line without a line break
beside them."""

from __future__ import annotations

import csv
import io
import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.sources.csv_lines import GOOD, MALFORMED, UNCLOSED_QUOTE
from cepplan.sources.local_source import read_canonical
from cepplan.sources.raw_batches import SourceError, raw_batches

NAMES = ["type", "ts", "note"]
SOURCE = {"format": "csv", "header": True, "type_column": "type", "time_column": "ts"}
FIELDS = st.text(alphabet='ab ,"', max_size=6)
ROWS = st.lists(st.tuples(FIELDS, FIELDS, FIELDS), min_size=1, max_size=25)
# where a row's line goes wrong: (row, field opened with a quote never closed) or an escape
DAMAGE = st.lists(st.tuples(st.integers(0, 24), st.sampled_from([0, 1, 2, "escape"])),
                  max_size=6)
BLANKS = st.lists(st.tuples(st.integers(0, 25), st.sampled_from(["", "  ", "\t"])),
                  max_size=4)


def _line(fields: tuple[str, ...]) -> str:
    out = io.StringIO()
    csv.writer(out, escapechar="\\", doublequote=False, lineterminator="").writerow(fields)
    return out.getvalue()


def _damaged(fields: tuple[str, ...], where: int | str) -> str:
    """The row's line with a quote opened at field `where` and never closed, or with a
    backslash before the line break."""
    if where == "escape":
        return _line(fields) + "\\"
    tail = ",".join(fields[where:]).replace('"', "")
    return ",".join([_line((f,)) for f in fields[:where]] + ['"' + tail])


def _read(text: bytes, block: int) -> tuple[list, list[int]]:
    """Rows (as lists of values, None for empty) and line problems in position order."""
    tables, problems, positions = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "events.csv")
        with open(path, "wb") as handle:
            handle.write(text)
        for table, problem, position in raw_batches([path], SOURCE, NAMES, {}, block, {}):
            tables.append(table.select(NAMES))
            problems.append(problem)
            positions.append(position)
    rows = pa.concat_tables(tables).to_pylist() if tables else []
    order = np.argsort(np.concatenate(positions)) if positions else []
    assert np.array_equal(np.sort(np.concatenate(positions)), np.arange(len(rows)))
    return ([list(rows[i].values()) for i in order],
            np.concatenate(problems)[order].tolist() if problems else [])


@settings(max_examples=200, deadline=None)
@given(ROWS, DAMAGE, BLANKS, st.integers(8, 200), st.booleans())
def test_each_damaged_line_is_its_own_rejected_row(rows, damage, blanks, block, final_break):
    """... and lines of blanks anywhere are no rows (as Spark skips them): the rows after
    one keep their positions (a malformed row after one took the next row's)."""
    broken = {row: where for row, where in damage if row < len(rows)}
    lines = [_damaged(r, broken[i]) if i in broken else _line(r) for i, r in enumerate(rows)]
    written = list(lines)
    for at, blank in sorted(blanks, reverse=True):
        written.insert(min(at, len(written)), blank)
    text = "\n".join([",".join(NAMES), *written]) + ("\n" if final_break else "")
    expected_rows, expected_problems = [], []
    for i, line in enumerate(lines):
        if i in broken:
            expected_rows.append([None] * 3)
            expected_problems.append(MALFORMED if broken[i] == "escape" else UNCLOSED_QUOTE)
            continue
        values = next(csv.reader([line], escapechar="\\", doublequote=False))
        expected_rows.append([v or None for v in values])
        expected_problems.append(GOOD)
    got_rows, got_problems = _read(text.encode(), block)
    assert got_problems == expected_problems
    assert got_rows == expected_rows


def _workload_read(path, source) -> dict[str | None, int]:
    """Rows per reject reason of the in-process reader (None: good rows)."""
    counts: dict[str | None, int] = {}
    for batch in read_canonical([str(path)], source, {"A": {"note": "string"}}, "s"):
        for code in batch.reject.tolist():
            reason = batch.reasons[code] if code >= 0 else None
            counts[reason] = counts.get(reason, 0) + 1
    return counts


def test_an_unclosed_quote_loses_no_row_of_the_file(tmp_path):
    """300 rows, the 100th opening a quote it never closes: 299 rows read, one rejected."""
    lines = [f"A,{i},n{i}" for i in range(300)]
    lines[99] = 'A,99,"n99'
    (tmp_path / "e.csv").write_text("type,ts,note\n" + "\n".join(lines) + "\n")
    assert _workload_read(tmp_path / "e.csv", SOURCE) == {None: 299, "unclosed quote": 1}


def test_json_lines_with_an_unclosed_string_lose_one_row(tmp_path):
    lines = [f'{{"type": "A", "ts": {i}, "note": "n{i}"}}' for i in range(50)]
    lines[10] = '{"type": "A", "ts": 10, "note": "n10}'
    (tmp_path / "e.jsonl").write_text("\n".join(lines))  # no final line break either
    source = {**SOURCE, "format": "jsonl"}
    assert _workload_read(tmp_path / "e.jsonl", source) == {None: 49, "malformed row": 1}


def test_a_last_line_without_a_line_break_is_read(tmp_path):
    (tmp_path / "e.csv").write_text("type,ts,note\nA,1,x\nA,2,y")
    assert _workload_read(tmp_path / "e.csv", SOURCE) == {None: 2}


def test_a_header_only_file_reads_no_row(tmp_path):
    """Column names and nothing else: no row, no error here (the commands then say the
    input has no usable row)."""
    (tmp_path / "e.csv").write_text("type,ts,note\n")
    assert _workload_read(tmp_path / "e.csv", SOURCE) == {}
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(SourceError, match="no header line"):
        _workload_read(tmp_path / "e.csv", SOURCE)
