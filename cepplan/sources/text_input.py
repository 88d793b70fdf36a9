"""Event text files as the in-process reader reads them: decompressed as their name says
(`input_files.COMPRESSIONS`, as Spark), bytes that are not UTF-8 replaced by U+FFFD (as
Spark's reader does; pyarrow's CSV reader aborts the process on such bytes in a malformed
row), lines bounded by `MAX_LINE_BYTES` (a file without line breaks is not read whole).

Imports only pyarrow, NumPy and the standard-library `input_files`, so the generated Spark
job ships it with the reader.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyarrow.lib import TransformInputStream

from cepplan.workload.input_files import BOM, compression

MAX_LINE_BYTES = 16 << 20  # the longest line (event) read; longer is an error naming it
_UTF8_BOM = BOM.encode()


class LineTooLong(ValueError):
    """A line longer than `MAX_LINE_BYTES`; `line` is its 1-based number (None: unknown)."""

    def __init__(self, line: int | None):
        which = f"line {line}" if line else "a line"
        super().__init__(f"{which} is longer than {MAX_LINE_BYTES >> 20} MiB, the longest "
                         "line cepplan reads (is it the right file, with line breaks?)")
        self.line = line


def open_text(path: str, text: bytes | None = None) -> pa.NativeFile:
    """The file's text as a stream: decompressed, invalid UTF-8 replaced, `LineTooLong`
    raised by a read reaching a line over the limit. `text`: these bytes (whole lines of the
    file) instead of the file."""
    raw = (pa.BufferReader(text) if text is not None
           else pa.input_stream(path, compression=compression(path)))
    return TransformInputStream(raw, _TextCheck())


class _TextCheck:
    """Stream transform: bounds each line's length (counting lines, to name the one at
    fault); blocks of valid UTF-8 pass unchanged (ASCII without a copy), any other byte
    sequence becomes U+FFFD, as Java's decoder replaces it."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._lines = 0  # line breaks seen
        self._open = 0  # bytes since the last one

    def __call__(self, block: pa.Buffer) -> pa.Buffer | bytes:
        final = len(block) == 0
        data = np.frombuffer(block, np.uint8)
        self._bound(data)
        if not final and not self._decoder.getstate()[0] and data.max() < 0x80:
            return block
        return self._decoder.decode(block.to_pybytes(), final).encode()

    def _bound(self, data: np.ndarray) -> None:
        """`LineTooLong` when a line ending in (or running through) `data` is too long."""
        breaks = np.flatnonzero(data == 10)
        lengths = np.diff(breaks, prepend=-1 - self._open) - 1  # of the lines ending here
        tail = len(data) - 1 - breaks[-1] if len(breaks) else self._open + len(data)
        over = np.flatnonzero(np.append(lengths, tail) > MAX_LINE_BYTES)
        if len(over):
            raise LineTooLong(self._lines + int(over[0]) + 1)
        self._lines += len(breaks)
        self._open = int(tail)


def text_blocks(stream: pa.NativeFile, block_bytes: int) -> Iterator[bytes]:
    """The stream's bytes in blocks of whole lines of about `block_bytes` (each ending in a
    line break but perhaps the last), read in the calling thread: pyarrow's CSV reader reads
    ahead in a thread of its own, which must never call back into Python (the checks of
    `open_text` are Python: an interrupted run deadlocked tearing such a reader down)."""
    rest = b""
    while data := stream.read(block_bytes):
        data = rest + data
        cut = data.rfind(b"\n") + 1
        block, rest = data[:cut], data[cut:]
        del data  # not held beside the block while it is used
        if cut:
            yield block
        del block
    if rest:
        yield rest


def line_blocks(stream: pa.NativeFile, block_bytes: int) -> Iterator[list[bytes]]:
    """Whole lines of an `open_text` stream (without line breaks, blank ones kept) in lists
    of about `block_bytes`, a leading byte order mark dropped."""
    for number, data in enumerate(text_blocks(stream, block_bytes)):
        if number == 0:
            data = data.removeprefix(_UTF8_BOM)
        yield data.removesuffix(b"\n").split(b"\n")


def first_line(stream: pa.NativeFile) -> str | None:
    """The first non-blank line as text, or None when there is none."""
    for lines in line_blocks(stream, 1 << 16):
        for line in lines:
            if line.strip():
                return line.decode()
    return None
