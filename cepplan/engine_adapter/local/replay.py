"""`cepplan replay`: an event file fed as a live stream, row by row in `ts` order (or
shuffled within a delay), at a rate or a speed-up of event time, to a directory (one file per
tick, renamed into place, `_END` at the end) or standard output (docs/engine.md, "Live
streams"). The rows are passed on as written; only their order and pace change."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from cepplan.engine_adapter.local.stream_source import END_MARKER, tcp_address
from cepplan.errors import InputError
from cepplan.sources.local_source import (
    SECONDS_PER_UNIT,
    SourceError,
    event_times,
    expand_paths,
    source_time_parser,
)
from cepplan.sources.raw_batches import raw_batches
from cepplan.sources.text_input import open_text

TICK_SECONDS = 0.05  # rows due are handed on together, at most this often


def replay_rows(paths: Sequence[str], reader: Mapping[str, Any]) -> tuple[bytes, list[bytes],
                                                                          np.ndarray]:
    """The header line (CSV with a header; else b""), the rows as lines and their `ts` in the
    time unit (NaN: unreadable, replayed where it was)."""
    source, unit = reader["source"], reader["time_unit"]
    if source["format"] not in ("csv", "jsonl"):
        raise InputError.single(", ".join(paths), "", f"replay reads CSV or JSON lines, not "
                                f"{source['format']}")
    files = expand_paths(list(paths))
    column = source.get("time_column", "ts")
    try:
        parser = source_time_parser(source.get("time_format"), unit)
        stamps = [event_times(raw.column(column).combine_chunks(), parser, unit)[0]
                  for raw, _, _ in raw_batches(files, source, [column], {}, 1 << 20,
                                                {"file": files[0]})]
    except SourceError as err:
        raise InputError.single(err.path or files[0], err.place, err.message) from None
    header, lines = b"", []
    skip = source["format"] == "csv" and source.get("header", True)
    for file in files:
        text = [line for line in open_text(file).read().splitlines(keepends=True)
                if line.strip()]
        if skip and text:
            header, text = header or text[0], text[1:]
        lines += [line if line.endswith(b"\n") else line + b"\n" for line in text]
    ts = np.concatenate(stamps) if stamps else np.empty(0)
    return header, lines, ts[:len(lines)]


def arrival_order(ts: np.ndarray, shuffle_within: float = 0.0, seed: int = 0) -> np.ndarray:
    """Row positions in arrival order: by `ts` (unreadable ones where they were), each moved
    later by a uniform draw in [0, shuffle_within) — so no row arrives more than
    `shuffle_within` behind the latest before it."""
    latest = np.maximum.accumulate(np.where(np.isnan(ts), 0, np.arange(len(ts))))
    filled = np.nan_to_num(ts[latest], nan=-np.inf) if len(ts) else ts
    key = filled + (np.random.default_rng(seed).uniform(0, shuffle_within, len(ts))
                    if shuffle_within > 0 else 0.0)
    return np.argsort(key, kind="stable")


def replay(header: bytes, lines: list[bytes], ts: np.ndarray, order: np.ndarray, to: str, *,
           rate: float | None, speed: float | None, time_unit: str, suffix: str) -> int:
    """Hand the rows on in `order`: `rate` rows per second, or event time sped up `speed`
    times, or as fast as they are written. Returns the rows handed on."""
    due = _due_seconds(ts[order], rate, speed, time_unit)
    sink = (_StreamSink(sys.stdout.buffer, header) if to == "-" else
            _StreamSink.served(to, header) if to.startswith("tcp://") else
            _DirectorySink(Path(to), header, suffix))
    start, sent = time.monotonic(), 0
    try:
        while sent < len(order):
            now = time.monotonic() - start
            upto = int(np.searchsorted(due, now, side="right")) if due is not None else len(order)
            if upto > sent:
                sink.write(b"".join(lines[i] for i in order[sent:upto]))
                sent = upto
            if sent < len(order):  # the next tick, or the next row's time if later
                time.sleep(max(TICK_SECONDS, float(due[sent]) - now))
    finally:
        sink.close()
    return sent


def _due_seconds(ts: np.ndarray, rate: float | None, speed: float | None,
                 time_unit: str) -> np.ndarray | None:
    """When each row (in arrival order) is due, in seconds from the start (None: at once)."""
    if rate:
        return np.arange(len(ts)) / rate
    if speed:
        clock = np.maximum.accumulate(np.nan_to_num(ts, nan=-np.inf)) if len(ts) else ts
        clock = np.where(np.isfinite(clock), clock, clock[np.isfinite(clock)].min()
                         if np.isfinite(clock).any() else 0.0)
        return (clock - clock[0]) * SECONDS_PER_UNIT[time_unit] / speed if len(ts) else clock
    return None


class _DirectorySink:
    """Each batch of rows as a new file of `folder` (written hidden, then renamed in);
    `_END` when done."""

    def __init__(self, folder: Path, header: bytes, suffix: str):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.header, self.suffix, self.count = folder, header, suffix, 0

    def write(self, rows: bytes) -> None:
        self.count += 1
        name = f"part-{self.count:08d}{self.suffix}"
        hidden = self.folder / f".{name}.tmp"
        hidden.write_bytes(self.header + rows)
        os.replace(hidden, self.folder / name)

    def close(self) -> None:
        (self.folder / END_MARKER).touch()


class _StreamSink:
    """Rows written to a binary stream, flushed per batch (the header first)."""

    def __init__(self, stream: BinaryIO, header: bytes, link: socket.socket | None = None):
        self.stream = stream
        self.link = link
        stream.write(header)

    @classmethod
    def served(cls, url: str, header: bytes) -> _StreamSink:
        """Listen on `tcp://HOST:PORT` and write to the first client that connects."""
        try:
            with socket.create_server(tcp_address(url)) as server:
                link, _ = server.accept()
        except OSError as err:
            raise InputError.single(url, "", f"cannot listen: {err.strerror or err}") from None
        return cls(link.makefile("wb"), header, link)

    def write(self, rows: bytes) -> None:
        self.stream.write(rows)
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()
        if self.link is not None:  # the end of the stream for the client
            self.stream.close()
            self.link.close()
