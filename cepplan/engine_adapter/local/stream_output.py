"""A live stream's output directory: matches appended as JSON lines as they are emitted, or
as Parquet parts (flushed per micro-batch), late events written aside, and each match's
detection latency: its emit wall time minus the arrival wall time of the last of its events
to arrive."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cepplan.engine_adapter.local.stream_parts import StreamParts
from cepplan.engine_adapter.local.writer import BackgroundFile, line_buffers
from cepplan.engine_adapter.runtime.arrivals import MatchArrivals, late_lines
from cepplan.engine_adapter.runtime.job import PartitionOutput
from cepplan.engine_adapter.runtime.latency_histogram import LatencyHistogram
from cepplan.engine_adapter.runtime.match_rows import PatternColumns
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.engine_adapter.runtime.timed_out_output import MATCHES_DIR
from cepplan.errors import InputError, OutputError

PART_FILE = "part-00000.jsonl"  # in each folder of matches (`output_folder`)
LATE_FILE = "late-events.jsonl"
LOG_PAIRS_READ = 1 << 20  # latencies read back at a time after a restart (16 MiB)


def _naming_the_output(method: Callable) -> Callable:
    """`method` of `StreamOutput` with a file system's refusal (a full disk, a read-only
    mount) raised as one line naming the output directory, not as a traceback."""
    @functools.wraps(method)
    def wrapped(self: StreamOutput, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except OSError as err:
            raise OutputError.from_os(self.out, err) from None
    return wrapped


class StreamOutput(MatchArrivals):
    """The files of `out`, written as the stream goes: created empty, or with `resume`
    (a checkpoint's lengths per file) cut back to those lengths and appended to. With
    `log`, each match's detection latency is also kept there (pattern number in `patterns`
    and seconds, as float64 pairs), so that a restart's figures count every match. With
    `parquet` (each pattern's layout), matches go to Parquet parts (`StreamParts`) instead;
    a checkpoint then records the part numbers used, not the matches' bytes. `folders`
    names, per pattern, the folder of `out` its JSON lines go to (`output_folder`: a
    pattern's timed-out partial matches under `timed_out/`; default `matches/`)."""

    def __init__(self, out: Path, types: dict[str, list[str]],
                 resume: dict[str, int] | None = None, log: Path | None = None,
                 patterns: list[str] | None = None,
                 parquet: dict[str, PatternColumns] | None = None,
                 folders: dict[str, str] | None = None):
        super().__init__()
        self.out = out
        self._folders = folders or {}
        self._open(types, resume, log, patterns, parquet)

    @_naming_the_output
    def _open(self, types: dict[str, list[str]], resume: dict[str, int] | None,
              log: Path | None, patterns: list[str] | None,
              parquet: dict[str, PatternColumns] | None) -> None:
        out = self.out
        (out / MATCHES_DIR).mkdir(parents=True, exist_ok=True)
        self.types = types
        texts = [] if parquet else sorted({MATCHES_DIR, *self._folders.values()})
        for folder in texts:
            (out / folder).mkdir(exist_ok=True)
        self.files = {**{folder: out / folder / PART_FILE for folder in texts},
                      "late": out / LATE_FILE, **({"latency": log} if log else {})}
        for name, path in self.files.items():
            if resume is not None:
                _cut(path, resume.get(name, 0))
        mode = "ab" if resume is not None else "wb"
        parts = None if resume is None else resume.get(MATCHES_DIR, 0)
        self._texts = {folder: BackgroundFile(self.files[folder], append=resume is not None)
                       for folder in texts}
        self._matches = (StreamParts(out / MATCHES_DIR, parquet, parts) if parquet else
                         self._texts[MATCHES_DIR])
        self._late = open(self.files["late"], mode)  # noqa: SIM115
        self.patterns = patterns or []
        self.latency: dict[str, LatencyHistogram] = {}  # per pattern, every match's
        self.recent: dict[str, np.ndarray] = {}  # per pattern, the last range's (seconds)
        self._log = None
        if log:
            if resume is not None and log.exists():
                self._read_latency(log)
            self._log = open(log, mode)  # noqa: SIM115

    def _read_latency(self, log: Path) -> None:
        """The detection latency of the matches written before a restart, from `log`."""
        with open(log, "rb") as handle:
            while len(pairs := np.fromfile(handle, "<f8", LOG_PAIRS_READ * 2)):
                pairs = pairs[:len(pairs) // 2 * 2].reshape(-1, 2)
                for number, name in enumerate(self.patterns):
                    seconds = pairs[pairs[:, 0] == number, 1]
                    if len(seconds):
                        self.latency.setdefault(name, LatencyHistogram()).add(seconds)

    @_naming_the_output
    def write(self, pattern: str, out: PartitionOutput,
              completed: np.ndarray | None = None) -> None:
        """Append one range's matches; record each one's detection latency (from
        `completed`, the arrival of each match's last event, when the matches were held)."""
        if not out.count:
            return
        emitted = time.time()
        if isinstance(self._matches, StreamParts):
            self._matches.write(pattern, out)
        else:
            self._texts[self._folders.get(pattern, MATCHES_DIR)].write(line_buffers(out))
        seconds = emitted - (self.completed(out) if completed is None else completed)
        self.latency.setdefault(pattern, LatencyHistogram()).add(seconds)
        self.recent[pattern] = seconds
        if self._log:
            number = np.full(len(seconds), self.patterns.index(pattern), dtype="<f8")
            self._log.write(np.column_stack([number, seconds]).astype("<f8").tobytes())

    @_naming_the_output
    def write_late(self, late: Columns) -> None:
        """Late events as JSON lines: type, ts, id and the type's attributes."""
        self._late.write(("\n".join(late_lines(late, self.types)) + "\n").encode())

    @_naming_the_output
    def flush(self) -> None:
        """Hand what was written to the operating system: readers see whole lines."""
        for file in self._files():
            file.flush()
        self._late.flush()

    @_naming_the_output
    def sync(self) -> dict[str, int]:
        """Put what was written on disk (flushed and fsynced); each file's length then."""
        files = {"late": self._late, **({"latency": self._log} if self._log else {})}
        for file in files.values():
            file.flush()
            os.fsync(file.fileno())
        written = ({folder: file.sync() for folder, file in self._texts.items()} or
                   {MATCHES_DIR: self._matches.sync()})
        return {**written, **{n: f.tell() for n, f in files.items()}}

    @_naming_the_output
    def close(self) -> None:
        for file in self._files():
            file.close()
        self._late.close()
        if self._log:
            self._log.close()

    def _files(self) -> list:
        """The files of matches: a JSON lines file per folder, or the Parquet parts."""
        return list(self._texts.values()) or [self._matches]

    def latency_figures(self) -> dict[str, dict[str, float | int]]:
        """Per pattern: detection latency p50, p99 and max in seconds, and how many matches."""
        return {p: h.figures() for p, h in self.latency.items() if h.count}


def _cut(path: Path, size: int) -> None:
    """`path` cut back to `size` bytes (what a checkpoint recorded: a micro-batch written
    after it is dropped, to be written again); an `InputError` if it is shorter."""
    have = path.stat().st_size if path.exists() else 0
    if have < size:
        raise InputError.single(str(path), "", f"holds {have} bytes, fewer than the "
                                f"{size} the checkpoint records: the output was changed "
                                "since; start again with a new output and --checkpoint")
    if path.exists():
        os.truncate(path, size)
