"""Where a live stream's events come from (`cepplan run --follow SOURCE`), as complete
files to read one by one (docs/engine.md, "Live streams"):

- a directory: each new file, in name order, once it is complete — a file is complete when
  it appears under its name (write it under a name starting with `.` or `_`, which are
  ignored, then rename it); a file named `_END` ends the stream after the files before it;
- `tcp://HOST:PORT`: newline-delimited lines from a server (connected to, retried for
  `CONNECT_SECONDS`), read as standard input is; the stream ends when the server closes;
- `-`: standard input, CSV (its header line first, when the source has one) or JSON lines,
  cut into micro-batches of whole lines, each spooled to a file read like any other.
"""

from __future__ import annotations

import os
import queue
import socket
import sys
import threading
import time
from pathlib import Path

from cepplan.errors import InputError

END_MARKER = "_END"
CONNECT_SECONDS = 30.0  # how long a tcp:// source is retried before it is an error
SPOOL_BYTES = 8 << 20  # a micro-batch of standard input is cut at about this size


class DirectorySource:
    """New complete files of a directory, in name order, each read once."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        if not self.folder.exists():
            raise InputError.single(folder, "", "no such directory to follow")
        if not self.folder.is_dir():
            raise InputError.single(folder, "", "is not a directory: --follow reads a "
                                    "directory's new files, or '-' (standard input)")
        self.seen: set[str] = set()
        self.ended = False

    def take(self, wait: float) -> list[tuple[str, float]]:
        """The files complete since the last call (waiting up to `wait` seconds for one),
        each with the wall time it was found."""
        deadline = time.monotonic() + wait
        while True:
            self.ended = (self.folder / END_MARKER).exists()  # before listing: none missed
            try:
                names = sorted(e.name for e in os.scandir(self.folder)
                               if e.is_file() and e.name[:1] not in (".", "_")
                               and e.name not in self.seen)
            except FileNotFoundError:
                raise InputError.single(str(self.folder), "", "the followed directory was "
                                        "removed") from None
            if names or self.ended or time.monotonic() >= deadline:
                found = time.time()
                self.seen.update(names)
                return [(str(self.folder / n), found) for n in names]
            time.sleep(min(0.05, wait))


class LinesSource:
    """Standard input (or any binary stream) cut into spooled files of whole lines, read by
    a thread so that a quiet input never holds up the micro-batches."""

    def __init__(self, spool: Path, suffix: str, header: bool, stream=None):
        self.spool = spool
        self.suffix = suffix
        self.header: bytes | None = None
        self.wants_header = header
        self.rest = b""
        self.count = 0
        self.ended = False
        self.blocks: queue.Queue = queue.Queue(64)
        stream = stream if stream is not None else sys.stdin.buffer
        threading.Thread(target=self._read, args=(stream,), daemon=True,
                         name="cepplan-stream-input").start()

    def _read(self, stream) -> None:
        """Blocks of bytes as they come, each with its arrival wall time; None at the end."""
        fd = stream.fileno()
        while block := os.read(fd, 1 << 16):
            self.blocks.put((block, time.time()))
        self.blocks.put(None)

    def take(self, wait: float) -> list[tuple[str, float]]:
        """The whole lines received within `wait` seconds (or up to `SPOOL_BYTES`) as one
        spooled file, with the arrival time of its first block; [] when none came."""
        deadline = time.monotonic() + wait
        parts, size, first = [], 0, None
        while not self.ended and size < SPOOL_BYTES:
            try:
                item = self.blocks.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                break
            if item is None:
                self.ended = True
                break
            parts.append(item[0])
            size += len(item[0])
            first = first or item[1]
            if time.monotonic() >= deadline:
                break
        data = self.rest + b"".join(parts)
        cut = len(data) if self.ended else data.rfind(b"\n") + 1
        lines, self.rest = data[:cut], data[cut:]
        if self.wants_header and self.header is None and lines:
            end = lines.find(b"\n") + 1 or len(lines)
            self.header, lines = lines[:end], lines[end:]
        if not lines.strip():
            return []
        self.count += 1
        path = self.spool / f"part-{self.count:08d}{self.suffix}"
        path.write_bytes((self.header or b"") + lines)
        return [(str(path), first or time.time())]


def tcp_address(url: str) -> tuple[str, int]:
    """(host, port) of `tcp://HOST:PORT`; an `InputError` naming it otherwise."""
    host, _, port = url.removeprefix("tcp://").rstrip("/").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError.single(url, "", "write a TCP address as tcp://HOST:PORT")
    return host.strip("[]"), int(port)


def connected(url: str) -> socket.socket:
    """A connection to `tcp://HOST:PORT`, retried while refused for `CONNECT_SECONDS`."""
    host, port = tcp_address(url)
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        try:
            link = socket.create_connection((host, port), timeout=5)
            link.settimeout(None)  # blocking reads from the reader thread
            return link
        except OSError as err:
            if time.monotonic() >= deadline or not isinstance(err, ConnectionRefusedError):
                raise InputError.single(url, "", f"cannot connect: {err.strerror or err}"
                                        ) from None
            time.sleep(0.1)
