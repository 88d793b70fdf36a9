"""The run's output directory: matches as part files and metrics.json, written into a hidden
staging directory beside `--out` and renamed over it only when everything succeeded
(`cepplan.interrupt.staged_directory`, which also clears what killed runs left behind).

JSON lines are written by a thread of their own, so that the disk writes the matches of one
range while the next are matched and rendered (Arrow and file writes release the GIL). That
thread keeps the file's page cache to a window (`BackgroundFile.RECYCLE_BYTES`): the kernel
then reuses pages it has just had, not fresh ones (docs/matching.md, "Output cost").
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cepplan.engine_adapter.local.range_skip import RangeSkips
from cepplan.engine_adapter.runtime.after_match import apply_skips
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput
from cepplan.engine_adapter.runtime.match_rows import match_layouts
from cepplan.engine_adapter.runtime.output_room import watched_output
from cepplan.engine_adapter.runtime.parquet_parts import ParquetParts, complete_parts
from cepplan.engine_adapter.runtime.records import lines_data
from cepplan.engine_adapter.runtime.timed_out_counts import with_timed_out
from cepplan.engine_adapter.runtime.timed_out_output import split_timed_out
from cepplan.fileio import write_bytes_atomic
from cepplan.interrupt import staged_directory


class MatchWriter:
    """Streams matches into `OUT/matches/`: JSON lines as `<part>.jsonl`, or Parquet as
    `pattern=NAME/<part>.parquet` per pattern (`ParquetParts`, in the layouts of `job`'s
    patterns); writes the consumer queries' results, if any, under `OUT/results/`. Several
    writers may share one `OUT` with different parts (the Spark job's range-local tasks).
    `skip_by_range`: the time ranges matched into it come first and in time order, so that
    their after-match skips are applied before rendering (`range_skip`)."""

    def __init__(self, staging: Path, output_format: str, job: Job | None = None,
                 part: str = "part-00000", *, skip_by_range: bool = False):
        self._staging = staging
        matches = staging / "matches"
        matches.mkdir(exist_ok=True)
        self._parquet = None
        self._text = None
        if output_format == "parquet":
            self._parquet = ParquetParts(matches, part, match_layouts(job))
        else:
            # closed by close(), which every path through staged_output calls
            self._text = BackgroundFile(matches / f"{part}.jsonl")
        # after-match skips applied by time range before rendering (`range_skip`); the
        # pass over the files runs too once matches of a skipped pattern come otherwise
        self.skips = RangeSkips.of(job) if job is not None and skip_by_range else None
        self.skipped_by_range_only = True

    def write(self, pattern: str, out: PartitionOutput, *, skipped: bool = False) -> None:
        """Append one partition's matches: JSON lines (written from their Arrow buffers
        without a copy) or typed rows; `skipped`: the range's skips already applied."""
        if not skipped and self.skips is not None and self.skips.applies(pattern):
            self.skipped_by_range_only = False
        if not out.count:
            return
        if self._text is not None:
            self._text.write(line_buffers(out))
        else:
            self._parquet.write(pattern, out)

    def append_bytes(self, data: bytes) -> None:
        """Append JSON lines already rendered (a worker's)."""
        self.skipped_by_range_only = False
        self._text.write([data])

    def append_file(self, path: Path) -> None:
        """Append the JSON lines of the file at `path` (a worker's spill file), after what
        was written before; the file is removed once copied."""
        self.skipped_by_range_only = False
        self._text.write([path])

    def adopt_parts(self, folder: Path) -> None:
        """The part files under `folder` (a worker's `matches` folder: JSON lines, or
        `pattern=NAME/` folders of Parquet) renamed into `OUT/matches/` at the same place,
        never copied; their names must differ from this writer's part (`part`)."""
        self.skipped_by_range_only = False
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            target = self._staging / "matches" / path.relative_to(folder)
            target.parent.mkdir(exist_ok=True)
            os.replace(path, target)

    def spill_directory(self) -> Path:
        """A directory for workers' spill files, beside the staged output: removed with
        the staging directory however the run ends."""
        spill = self._staging.parent / "spill"
        spill.mkdir(exist_ok=True)
        return spill

    def write_results(self, lines: bytes) -> None:
        """The consumer queries' results (JSON lines) as `OUT/results/part-00000.jsonl`."""
        (self._staging / "results").mkdir()
        (self._staging / "results" / "part-00000.jsonl").write_bytes(lines)

    def close(self, *, complete: bool = True) -> None:
        """Finish the files (`complete`: every match written; else pending ones dropped)."""
        if self._text is not None:
            self._text.close(complete=complete)
        if self._parquet is not None:
            self._parquet.close(complete=complete)

    def fill(self) -> None:
        """After `close`: an empty part for each pattern without matches (Parquet), so that
        every pattern's directory reads as its columns."""
        if self._parquet is not None:
            complete_parts(self._staging / "matches", self._parquet.layouts)


def line_buffers(out: PartitionOutput) -> list:
    """The bytes of an output's JSON lines, as buffers to write one after the other."""
    lines = out.matches
    return [lines.encode()] if isinstance(lines, str) else list(lines_data(lines))


@contextmanager
def staged_output(out: Path, output_format: str,
                  job: Job | None = None) -> Iterator[tuple[MatchWriter, Any]]:
    """(match writer, finish(metrics)) over a fresh staging directory, renamed over `out`
    when the block ends normally; on any exception (Ctrl-C and SIGTERM included) it is removed
    and `out` left as it was."""
    with staged_directory(out) as staging:
        staging.mkdir()
        writer = MatchWriter(staging, output_format, job, skip_by_range=True)

        def finish(metrics: dict[str, Any]) -> None:
            writer.close()
            writer.fill()
            if job is not None:
                with_timed_out(metrics, job.data.get("patterns", ()))
            split_timed_out(staging, job.data if job is not None else {})
            apply_skips(staging, job.data if job is not None else {}, metrics,
                        writer.skips, writer.skipped_by_range_only)
            write_bytes_atomic(staging / "metrics.json", json.dumps(metrics, indent=2).encode())

        try:
            with watched_output(staging, output_format):
                yield writer, finish
        finally:
            writer.close(complete=False)  # after finish: already closed


class BackgroundFile:
    """A binary file written by a thread: `write` queues buffers (at most `PENDING`, each
    at most a chunk of rendered matches, which bounds memory; or paths of files to append,
    `MatchWriter.append_file`; queued one by one, so that a
    partition's many chunks do not hold up the next partition's few) and returns; an
    error of the thread is raised by the next `write` or by `close`. Every
    `RECYCLE_BYTES` written, the file's pages the disk already has are dropped from the
    page cache and their writeback started for the rest, so that the page cache recycles
    a window's worth of pages instead of taking a fresh page per 4 KiB of output: on a
    virtual machine whose freed memory goes back to the host, fresh pages cost the writer
    2-10 times the CPU of the copy (docs/matching.md, "Output cost")."""

    PENDING = 64  # chunks: rendering outruns the disk in bursts (docs/matching.md)
    # and their bytes: a chunk of Kleene matches can be a hundred MB, so 64 of them queued
    # behind a slow disk (or a writer starved of CPU) took the matcher's whole budget
    PENDING_BYTES = 64 << 20
    RECYCLE_BYTES = 32 << 20

    def __init__(self, path: Path, *, append: bool = False):
        self._file = open(path, "ab" if append else "wb")  # noqa: SIM115 (closed by the thread)
        self._size = self._file.tell()  # the bytes on disk at the last `sync`
        self._queue: queue.Queue = queue.Queue(self.PENDING)
        self._pending = 0  # bytes queued, not yet written
        self._written = threading.Condition()
        self._error: BaseException | None = None
        self._drop = False
        self._thread = threading.Thread(target=self._run, name="cepplan-writer", daemon=True)
        self._thread.start()

    def write(self, buffers: list) -> None:
        """Queue `buffers`, waiting while those queued before take `PENDING_BYTES`."""
        self._raise()
        for data in buffers:
            size = _bytes(data)
            with self._written:
                while self._pending and self._pending + size > self.PENDING_BYTES \
                        and self._error is None and self._thread.is_alive():
                    self._written.wait(0.1)
                self._pending += size
            self._queue.put(data)

    def flush(self) -> None:
        """Have the thread hand what was queued so far to the operating system once written
        (a live stream's micro-batch: readers then see whole lines)."""
        self.write([_FLUSH])

    def sync(self) -> int:
        """Wait until everything queued so far is on disk (flushed and fsynced); the file's
        size then (a live stream's checkpoint records it)."""
        done = threading.Event()
        self.write([done])
        while not done.wait(0.1) and self._thread.is_alive():
            pass
        self._raise()
        return self._size

    def close(self, *, complete: bool = True) -> None:
        if self._thread.is_alive():
            self._drop = not complete
            self._queue.put(None)
            self._thread.join()
        if complete:
            self._raise()

    def _done(self, data: Any) -> None:
        """`data` written: its bytes no longer pending."""
        with self._written:
            self._pending -= _bytes(data)
            self._written.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        written = recycled = self._size
        try:
            while (data := self._queue.get()) is not None:
                if data is _FLUSH:
                    self._file.flush()
                elif isinstance(data, threading.Event):  # `sync`
                    self._file.flush()
                    os.fsync(self._file.fileno())
                    self._size = self._file.tell()
                    data.set()
                elif self._error is None and not self._drop:
                    written += (_append(self._file, data) if isinstance(data, Path) else
                                self._file.write(data))
                    if written - recycled >= self.RECYCLE_BYTES:
                        self._file.flush()
                        _recycle(self._file.fileno(), written)
                        recycled = written
                self._done(data)
        except BaseException as err:  # e.g. a full disk: raised in the main thread
            self._error = err
            while (data := self._queue.get()) is not None:  # unblock the writer until close
                if isinstance(data, threading.Event):
                    data.set()  # a `sync` waiting: it raises the error
        finally:
            try:
                self._file.close()  # flushes the last buffer: a full disk may show only here
            except BaseException as err:
                self._error = self._error or err


def _append(file: Any, path: Path) -> int:
    """The file at `path` appended to `file` by the kernel (no copy through Python) and
    removed; the bytes appended."""
    file.flush()
    with open(path, "rb") as source:
        size = _send(file, source, 0, os.fstat(source.fileno()).st_size)
    path.unlink()
    return size


def _send(file: Any, source: Any, start: int, end: int) -> int:
    """Bytes [start, end) of `source` appended to `file` by the kernel; how many."""
    done = start
    while done < end:
        sent = os.sendfile(file.fileno(), source.fileno(), done, end - done)
        if not sent:
            raise OSError(f"{source.name}: ended after {done} of {end} bytes")
        done += sent
    return end - start


_FLUSH = object()  # queued by `BackgroundFile.flush`


def _bytes(data: Any) -> int:
    """The bytes a queued item holds in memory: a buffer's; none for a file to append or a
    signal."""
    if isinstance(data, Path | threading.Event) or data is _FLUSH:
        return 0
    return memoryview(data).nbytes


def _recycle(fd: int, size: int) -> None:
    """Start writing back the file's first `size` bytes and drop the pages of them already
    written back (`POSIX_FADV_DONTNEED` does both, without waiting; a no-op where the
    platform or file system has no such advice)."""
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)
