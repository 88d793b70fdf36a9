"""The in-process reader's text stream against plain Python on random bytes read in random
pieces: the text equals `bytes.decode("utf-8", "replace")` of the whole, and the first line
longer than the limit is the one named."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.sources import text_input

PIECES = st.lists(st.integers(1, 40), min_size=1, max_size=30)


def _read(text: bytes, pieces: list[int]) -> bytes:
    """The stream's bytes, read in pieces of the given sizes (the last repeated)."""
    stream = text_input.open_text("", text)
    out, index = [], 0
    while True:
        data = stream.read(pieces[min(index, len(pieces) - 1)])
        index += 1
        if not data:
            return b"".join(out)
        out.append(data)


@settings(max_examples=300)
@given(st.binary(max_size=200), PIECES)
def test_text_is_utf8_with_bad_bytes_replaced(data, pieces):
    assert _read(data, pieces).decode() == data.decode("utf-8", "replace")


@settings(max_examples=300,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the same limit each
@given(st.lists(st.integers(0, 30), min_size=1, max_size=12), st.booleans(), PIECES)
def test_the_first_line_over_the_limit_is_named(monkeypatch, lengths, final_break, pieces):
    monkeypatch.setattr(text_input, "MAX_LINE_BYTES", 20)
    text = b"\n".join(b"x" * n for n in lengths) + (b"\n" if final_break else b"")
    over = [i + 1 for i, n in enumerate(lengths) if n > 20]
    if not over:
        assert _read(text, pieces) == text
        return
    with pytest.raises(text_input.LineTooLong) as caught:
        _read(text, pieces)
    assert caught.value.line == over[0]


def test_lines_keep_blank_ones_and_drop_a_byte_order_mark():
    stream = text_input.open_text("", b"\xef\xbb\xbfa,b\n\n1,2\r\n3")
    assert [line for block in text_input.line_blocks(stream, 4) for line in block] == [
        b"a,b", b"", b"1,2\r", b"3"]


@settings(max_examples=200)
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=20),
       st.booleans(), st.integers(1, 30))
def test_text_blocks_are_whole_lines_of_the_text(lines, final_break, block):
    """Blocks joined give the text back, and each but the last ends at a line break."""
    text = b"\n".join(lines) + (b"\n" if final_break and lines else b"")
    blocks = list(text_input.text_blocks(text_input.open_text("", text), block))
    assert b"".join(blocks) == text.decode("utf-8", "replace").encode()
    assert all(b.endswith(b"\n") for b in blocks[:-1])


def test_the_csv_parser_reads_from_memory_only(tmp_path, monkeypatch):
    """pyarrow's CSV reader reads ahead in a thread of its own; a stream whose reads call
    back into Python (the text checks) deadlocked an interrupted run tearing it down. The
    reader is only ever given bytes in memory."""
    import pyarrow as pa
    from pyarrow import csv as pa_csv

    from cepplan.sources import raw_batches

    given_streams = []
    open_csv = pa_csv.open_csv

    def recording(stream, *args, **kwargs):
        given_streams.append(type(stream))
        return open_csv(stream, *args, **kwargs)

    monkeypatch.setattr(raw_batches.pa_csv, "open_csv", recording)
    path = tmp_path / "events.csv"
    path.write_text("event,ts\n" + "".join(f"A,{i}\n" for i in range(2000)))
    batches = raw_batches._csv_batches([str(path)], {"header": True}, ["event", "ts"], 1000, {})
    rows = sum(table.num_rows for table, _, _ in batches)
    assert rows == 2000 and len(given_streams) > 1
    assert set(given_streams) == {pa.BufferReader}
