"""Time ranges matched in worker processes (docs/engine.md, "Workers"): the parent reads and
tags the events and cuts them into the same time ranges, with the same margins, as with one
worker; each range is matched by one of N spawned worker processes (never a fork of a parent
holding the writer's thread), which writes the range's matches into a spill file; the parent
appends the spill files to the output in range order. So the files are the same byte for byte
whatever N, and memory holds N ranges, not the output.

Each worker gets `1/N` of the matcher's memory budget. On any exception in the parent (an
interruption included) every worker is killed before it goes on; a worker dies with its
parent (Linux parent-death signal) and ignores the terminal's Ctrl-C, which the parent handles.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import multiprocessing
import os
import pickle
import queue
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cepplan.engine_adapter.local.pandas_hold import hold_pandas_back
from cepplan.engine_adapter.local.partial_counts import added
from cepplan.engine_adapter.local.totals import PatternTotals
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput, job_from_json
from cepplan.engine_adapter.runtime.match_rows import match_layouts
from cepplan.engine_adapter.runtime.memory import MEMORY_VARIABLE, budget, peak_resident
from cepplan.engine_adapter.runtime.output_room import watched_output
from cepplan.engine_adapter.runtime.shared_nodes import SharingPlan, used_sharing
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.errors import CepplanError
from cepplan.interrupt import die_with_parent
from cepplan.limits import MAX_WORKERS

# ranges submitted and not yet appended to the output, per worker: enough for the parent to
# read on while the workers start (a range is a few MB: its tagged rows and margins)
IN_FLIGHT = 8


class WorkerError(CepplanError):
    """A worker process ended without reporting its range (killed, e.g. out of memory)."""


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at most `MAX_WORKERS`."""
    try:
        return min(MAX_WORKERS, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return min(MAX_WORKERS, os.cpu_count() or 1)


@dataclass
class RangeFigures:
    """What matching time ranges adds to the metrics: per pattern its totals, partial
    matches per join prefix, seconds
    per stage (summed over workers), partial matches per shared node, and the workers'
    peak resident memory (summed: they run side by side)."""

    totals: dict[str, PatternTotals]
    built: dict[str, list[int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    partials: dict[int, int] = field(default_factory=dict)
    worker_peaks: dict[int, int] = field(default_factory=dict)

    @classmethod
    def empty(cls, job: Job) -> RangeFigures:
        return cls({p.name: PatternTotals() for p in job.patterns})

    def add(self, other: RangeFigures) -> None:
        """Another range's figures added to these."""
        for name, total in other.totals.items():
            self.totals[name].add(total)
        for name, counts in other.built.items():
            self.built[name] = added(self.built.get(name, []), counts)
        for key, value in other.seconds.items():
            self.seconds[key] = self.seconds.get(key, 0.0) + value
        for node, count in other.partials.items():
            self.partials[node] = self.partials.get(node, 0) + count
        self.worker_peaks.update(other.worker_peaks)


# matches the ranges whose latest event lies in `owned` over `pool` (the events of that range
# and a margin), written, its figures added to the dicts given: `engine.match_range`, passed
# in (and to each worker, by name) so that this module does not import the engine
MatchRange = Callable[..., None]


def match_range(match: MatchRange, pool: Columns, job: Job, owned: tuple[float, float],
                writer: Any, figures: RangeFigures, sharing: SharingPlan | None) -> None:
    """`match` over one range, its figures added to `figures` (`sharing`: the job's
    `used_sharing`)."""
    match(pool, job, owned, writer, figures.totals, figures.built, figures.seconds, sharing,
          figures.partials)


class RangeMatching:
    """Time ranges matched as they are cut (`match`), by `count` worker processes, or in
    this process when `count` is 1 or the input makes a single range; `finish` appends what
    is left and stops the workers; `workers` says how many matched."""

    def __init__(self, match: MatchRange, job: Job, data: dict[str, Any], writer: Any,
                 figures: RangeFigures, count: int, output_format: str):
        self.match_function = match
        self.job, self.data, self.writer, self.figures = job, data, writer, figures
        self.count, self.output_format = count, output_format
        self.sharing = used_sharing(job)
        self._first: tuple | None = None  # held until a second range shows workers pay
        self._pool: _WorkerPool | None = None

    def match(self, pool: Columns, span: tuple[float, float], owned: tuple[float, float]
              ) -> None:
        """Match the range `owned` of `pool` (the job's input covering `span` so far)."""
        if self.count == 1:
            match_range(self.match_function, pool, replace(self.job, span=span), owned,
                        self.writer, self.figures, self.sharing)
            return
        if self._pool is None and self._first is None:
            self._first = (pool, span, owned)
            return
        if self._pool is None:
            self._pool = _WorkerPool(self.match_function, self.count, self.data,
                                     self.output_format, self.writer.spill_directory())
            self._pool.submit(self._first)
            self._first = None
        self._pool.submit((pool, span, owned))
        while self._pool.pending >= IN_FLIGHT * self.count:
            self._append_oldest()

    @property
    def workers(self) -> int:
        """The processes that matched: the workers started, else this one."""
        return len(self._pool.processes) if self._pool is not None else 1

    def finish(self) -> None:
        """The ranges still pending appended to the output; the workers stopped."""
        if self._first is not None:  # one range in all: no worker started for it
            pool, span, owned = self._first
            self._first = None
            match_range(self.match_function, pool, replace(self.job, span=span), owned,
                        self.writer, self.figures, self.sharing)
        if self._pool is not None:
            while self._pool.pending:
                self._append_oldest()
            self._pool.close()

    def stop(self) -> None:
        """Every worker killed (on an exception or an interruption in the parent)."""
        if self._pool is not None:
            self._pool.kill()

    def _append_oldest(self) -> None:
        self.figures.add(self._pool.append_oldest(self.writer, self.output_format))


@contextlib.contextmanager
def range_matching(match: MatchRange, job: Job, data: dict[str, Any], writer: Any,
                   figures: RangeFigures, count: int,
                   output_format: str) -> Iterator[RangeMatching]:
    """A `RangeMatching` whose workers are killed if the block ends with an exception."""
    matching = RangeMatching(match, job, data, writer, figures, count, output_format)
    try:
        yield matching
    except BaseException:
        matching.stop()
        raise


class _WorkerPool:
    """Up to `count` spawned worker processes, each started when the first range for it
    comes (a short input starts fewer); range k goes to worker k mod count, so the results
    are taken back in submission order from one worker after the other."""

    def __init__(self, match: MatchRange, count: int, data: dict[str, Any],
                 output_format: str, spill: Path):
        self._match, self._count = match, count
        # the job goes to the workers as a file: in a worker's start-up arguments it made
        # `start` wait until the worker had imported its modules (its pipe full meanwhile)
        self._job_file = spill / "job.json"
        self._job_file.write_text(json.dumps(data))
        self._output_format, self._spill = output_format, spill
        # a bad CEPPLAN_MATCH_MEMORY is reported here, once; a share is at least a byte
        self._share = max(1, budget() // count)
        keep_freed_heap()  # the workers' chunks received, written and freed
        self._connections: list = []
        self._outboxes: list[queue.SimpleQueue] = []
        self.processes: list = []
        self._submitted = self._taken = 0

    def _start(self) -> None:
        """One more worker. A spawned interpreter ignores Ctrl-C only once it runs `_serve`: a
        Ctrl-C during its start-up (a fraction of a second) makes Python print its own lines."""
        context = multiprocessing.get_context("spawn")
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, name=f"cepplan-worker-{len(self.processes)}",
                                  args=(theirs, self._match, str(self._job_file),
                                        self._output_format, self._share,
                                        RangeOutput.HELD_BYTES, os.getpid()),
                                  daemon=True)
        process.start()
        theirs.close()
        self._connections.append(mine)
        self._outboxes.append(_sender(mine))
        self.processes.append(process)

    @property
    def pending(self) -> int:
        return self._submitted - self._taken

    def submit(self, task: tuple) -> None:
        index = self._submitted % self._count
        if index == len(self.processes):
            self._start()
        path = self._spill / f"range-{self._submitted:08d}"
        self._outboxes[index].put((*task, str(path)))
        self._submitted += 1

    def append_oldest(self, writer: Any, output_format: str) -> RangeFigures:
        """The oldest pending range's matches appended to the output (`RangeOutput`); its
        figures returned, or the worker's error raised."""
        index = self._taken % self._count
        connection = self._connections[index]
        try:
            kind, value = connection.recv()
            if kind == "error":
                raise value
            figures, chunks, spill = value
            for _ in range(chunks):
                _append_chunk(writer, connection.recv_bytes(), output_format)
        except (EOFError, ConnectionError):
            process = self.processes[index]
            process.join(1.0)
            raise WorkerError(f"a worker process matching time ranges ended unexpectedly "
                              f"(exit code {process.exitcode}): out of memory? Try fewer "
                              "--workers or a lower CEPPLAN_MATCH_MEMORY") from None
        self._taken += 1
        if spill is not None:
            append_spill(writer, Path(spill), output_format)
        return figures

    def close(self) -> None:
        """The workers told to end, and waited for."""
        for outbox in self._outboxes:
            outbox.put(None)
        for process in self.processes:
            process.join()

    def kill(self) -> None:
        """The workers killed and reaped (their senders then fail and end)."""
        for process in self.processes:
            with contextlib.suppress(OSError):
                process.kill()
        for process in self.processes:
            process.join()
        for outbox in self._outboxes:
            outbox.put(None)


def _sender(connection: Any) -> queue.SimpleQueue:
    """A queue whose tasks a thread sends to a worker, then None (the end): a range does not
    fit a pipe, and a worker reads only once it has started, so `submit` would otherwise wait
    for each new worker's start-up (0.4-0.6 s) before cutting the next range."""
    outbox: queue.SimpleQueue = queue.SimpleQueue()

    def send() -> None:
        with contextlib.suppress(OSError):  # the worker killed: nothing left to send
            while True:
                task = outbox.get()
                connection.send(task)
                if task is None:
                    return

    threading.Thread(target=send, name="cepplan-worker-sender", daemon=True).start()
    return outbox


def _serve(connection: Any, match: MatchRange, job_file: str, output_format: str,
           share: int, held: int, parent: int) -> None:
    """A worker: match each range sent, send back its figures and its matches (or the error
    that stopped it), until told to end."""
    if not started_as_worker(share, parent):
        return
    job = job_from_json(json.loads(Path(job_file).read_text()))
    layouts = match_layouts(job) if output_format == "parquet" else None
    sharing = used_sharing(job)
    with watched_output(Path(job_file).parent, output_format):
        _serve_tasks(connection, match, job, layouts, held, sharing)


def _serve_tasks(connection: Any, match: MatchRange, job: Job, layouts: Any, held: int,
                 sharing: Any) -> None:
    """`_serve`'s loop: each range sent matched, its figures and matches sent back."""
    for task in _received(connection):
        pool, span, owned, path = task
        figures = RangeFigures.empty(job)
        output = RangeOutput(Path(path), layouts, held)
        try:
            match_range(match, pool, replace(job, span=span), owned, output, figures, sharing)
            output.close()
            figures.worker_peaks[os.getpid()] = peak_resident()
        except Exception as err:  # sent to the parent, which raises it
            connection.send(("error", sendable(err)))
            continue
        connection.send(("done", (figures, len(output.chunks),
                                  None if output.spill is None else str(output.path))))
        for chunk in output.chunks:
            connection.send_bytes(chunk)


def _received(connection: Any) -> Iterator[tuple]:
    """The tasks sent to this worker, read by a thread as they come, so that the parent
    never waits to send a range while this worker waits to send it the last one's matches
    (each would wait for the other)."""
    tasks: queue.SimpleQueue = queue.SimpleQueue()

    def receive() -> None:
        try:
            while (task := connection.recv()) is not None:
                tasks.put(task)
        finally:
            tasks.put(None)

    threading.Thread(target=receive, name="cepplan-worker-tasks", daemon=True).start()
    while (task := tasks.get()) is not None:
        yield task


class RangeOutput:
    """The writer a worker hands the matcher: JSON lines as their bytes, or Parquet rows as
    pickled (pattern, record batches); held in memory up to `held` bytes (the parent's
    `HELD_BYTES`), the rest written to the range's spill file (a range's output can pass any
    memory)."""

    HELD_BYTES = 64 << 20

    def __init__(self, path: Path, layouts: dict | None, held: int):
        self.path, self._layouts, self._limit = path, layouts, held
        self.chunks: list = []
        self.spill: Any = None
        self._held = 0

    def write(self, pattern: str, out: PartitionOutput) -> None:
        if not out.count:
            return
        if self._layouts is None:
            from cepplan.engine_adapter.local.writer import line_buffers

            for data in line_buffers(out):
                self._keep(data)
        else:
            batches = list(out.rows(self._layouts[pattern]))
            self._keep(pickle.dumps((pattern, batches), protocol=pickle.HIGHEST_PROTOCOL))

    def close(self) -> None:
        if self.spill is not None:
            self.spill.close()

    def _keep(self, data: Any) -> None:
        if self.spill is None and self._held + len(data) <= self._limit:
            self.chunks.append(data)
            self._held += len(data)
            return
        if self.spill is None:
            self.spill = open(self.path, "wb")  # noqa: SIM115 (closed by close)
        self.spill.write(data)


# glibc's mallopt parameters: the size from which an allocation is mapped on its own (and
# unmapped when freed), and the free memory at the heap's top that is kept, not given back
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def started_as_worker(share: int, parent: int) -> bool:
    """Set a spawned worker process up: Ctrl-C left to the parent, killed with it, its share
    of the memory budget, freed memory kept for reuse, pandas held back as in the parent
    (pyarrow would import it, 0.3 s, otherwise). False when the parent has already ended."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the line above
        return False
    os.environ[MEMORY_VARIABLE] = str(share)
    keep_freed_heap()
    hold_pandas_back()
    return True


def keep_freed_heap() -> None:
    """glibc keeps freed blocks (up to 32 MiB each, its largest setting: NumPy arrays, the
    chunks of output received) for reuse instead of unmapping them: a fresh worker otherwise
    faults in new pages for every range's arrays, which on a virtual machine cost it more
    system time than its matching (8 µs a page measured)."""
    name = ctypes.util.find_library("c")
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None) if name else None
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 32 << 20)
        mallopt(_M_TRIM_THRESHOLD, 1 << 30)


def sendable(err: Exception) -> Exception:
    """`err` if it survives pickling whole, else a `CepplanError` with its message."""
    try:
        return pickle.loads(pickle.dumps(err))
    except Exception:  # one whose constructor unpickling cannot call
        return CepplanError(str(err))


@dataclass
class _SpilledRows:
    """A worker's Parquet rows of one output, as the writer takes a `PartitionOutput`."""

    batches: list
    count: int

    def rows(self, _layout: Any) -> Iterator:
        yield from self.batches


def _append_chunk(writer: Any, chunk: bytes, output_format: str) -> None:
    """One chunk of a worker's output appended: JSON lines, or a pickled Parquet record."""
    if output_format != "parquet":
        writer.append_bytes(chunk)
        return
    pattern, batches = pickle.loads(chunk)  # written by our own worker (`RangeOutput`)
    writer.write(pattern, _SpilledRows(batches, sum(b.num_rows for b in batches)))


def append_spill(writer: Any, spill: Path, output_format: str) -> None:
    """A range's spill file appended to the output and removed."""
    if output_format != "parquet":
        writer.append_file(spill)  # the writer's thread copies, then removes it
        return
    with open(spill, "rb") as records:
        while True:
            try:
                pattern, batches = pickle.load(records)
            except EOFError:
                break
            writer.write(pattern, _SpilledRows(batches, sum(b.num_rows for b in batches)))
    spill.unlink()
