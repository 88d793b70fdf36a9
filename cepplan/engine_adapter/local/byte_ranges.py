"""One time-ordered CSV file matched by byte range (docs/engine.md, "Workers"): the file is
cut into line-aligned byte ranges as Spark's range tasks cut it (`sources.csv_ranges`); this
process reads, tags and matches the first range, and each other range is read, tagged and
matched by a worker process of its own, which writes its matches into a part file that this
process appends in range order. Nothing is read twice but the margins around the ranges.

The matches are cut on a time grid that depends on the file alone (`Cells`, at least a
window margin wide): each cell is matched over exactly the tagged rows within a margin of it,
so the files are the same byte for byte whatever the number of workers. A range owns the
cells after the cell of its first tagged row (the first range: every cell before), up to the
cell of the next range's first tagged row, which it reads ahead to.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import os
import pickle
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cepplan.engine_adapter.local.range_cut import range_count
from cepplan.engine_adapter.local.range_match import (
    EMPTY_POOL_COLUMNS,
    match_range,
    tagged_rows,
    wanted_columns,
    window_margin,
)
from cepplan.engine_adapter.local.readable import plain_csv
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.workers import (
    RangeFigures,
    WorkerError,
    keep_freed_heap,
    sendable,
    started_as_worker,
)
from cepplan.engine_adapter.runtime.contiguity import Timeline, stamp_only, timelines
from cepplan.engine_adapter.runtime.job import Covered, Job, job_from_json
from cepplan.engine_adapter.runtime.memory import MEMORY_VARIABLE, budget, peak_resident
from cepplan.engine_adapter.runtime.output_room import watched_output
from cepplan.engine_adapter.runtime.shared_nodes import used_sharing
from cepplan.engine_adapter.runtime.table import Columns, joined_releasing
from cepplan.sources.csv_ranges import Region, header_columns, line_regions, line_start
from cepplan.sources.text_input import MAX_LINE_BYTES
from cepplan.workload.columns import EVENT_ID, EVENT_TS

if TYPE_CHECKING:
    from cepplan.engine_adapter.local.standby import Standby

CHUNK_BYTES = 1 << 20  # whole lines read, parsed and tagged at once
FIRST_MARGIN_BYTES = 64 << 10  # the first guess of a margin's size, doubled until it holds


class Unordered(Exception):
    """The rows of a range or its margins are not in time order."""


class Unsplittable(Exception):
    """The file cannot be read by byte range after all; `str()` says why (the other path
    reads it, and reports its errors with their lines)."""


BLANK_LINES = "the CSV file has blank lines"  # a range's rows fewer than its lines: ids off
LONG_LINE = "the CSV file has a line too long to read"


@dataclass(frozen=True)
class Cells:
    """The time grid matches are cut on: cells of `width` time units from time 0."""

    width: float

    def index(self, stamps: np.ndarray) -> np.ndarray:
        """Each time's cell, exact at the boundaries (`start(i) <= t < start(i + 1)`)."""
        guess = np.floor(stamps / self.width)
        guess -= stamps < guess * self.width
        guess += stamps >= (guess + 1) * self.width
        return guess

    def start(self, index: float) -> float:
        return index * self.width

    def after(self, stamp: float) -> float:
        """The end of the cell holding `stamp` (infinite for an infinite stamp)."""
        if not math.isfinite(stamp):
            return stamp
        return self.start(float(self.index(np.array([stamp]))[0]) + 1)


@dataclass(frozen=True)
class FileInput:
    """What every range's reader needs of the file: its path and columns, the cells and
    the window margin (`range_match.window_margin`)."""

    path: str
    names: tuple[str, ...]
    cells: Cells
    margin: float


@dataclass
class RangeRead:
    """What a range's reader counted in the range itself (not its margins): rows read,
    rejected by reason, the good rows' time, the tagged rows' first and last time."""

    read: int = 0
    rejected: Counter = field(default_factory=Counter)
    covered: Covered = field(default_factory=Covered)
    first: float = math.inf
    last: float = -math.inf


class RangeReader:
    """Reads and tags lines of the file with the in-process reader and tagging, a chunk of
    whole lines at a time; row ids are positions over the file."""

    def __init__(self, job: Job, data: Mapping[str, Any], file: FileInput, *,
                 stamped: bool = False):
        self.job, self.file = job, file
        reader = data["reader"]
        self.source = {**reader["source"], "header": False, "columns": list(file.names)}
        self.attributes, self.time_unit = reader["attributes"], reader["time_unit"]
        self.positions = not reader["source"].get("id_column")
        self.timelines = self.stamping() if stamped else []
        self.timing = stamp_only(job.patterns, job.stages, self.timelines)
        self.used = {o.type for p in job.patterns for o in p.operands} - self.timing.types
        self.wanted = wanted_columns(job) + [t.column for t in self.timelines]
        self.covered = Covered()  # the good rows' time, margins included (`Job.span`)
        self.own = RangeRead()
        self.rows_seen = 0

    def stamping(self) -> list[Timeline]:
        """The timelines stamping each event with its partition's latest earlier time
        (`contiguity`), for a reader that reads the file in order from its first row: the
        first range's. A later range reads its own first lines before the margin before
        them, so its events are not stamped, and strict contiguity is checked there by the
        pattern's hidden negations instead (the same matches)."""
        return [] if used_sharing(self.job) else timelines(self.job.patterns, self.job.stages)

    def chunks(self, start: int, end: int, before: int, *, own: bool = False
               ) -> Iterator[Columns]:
        """The tagged rows of the lines in [start, end) (line starts), chunk by chunk; the
        first line is row `before` of the file; counted in `own` if `own`."""
        with open(self.file.path, "rb") as handle:
            handle.seek(start)
            position = start
            while position < end:
                text = handle.read(min(CHUNK_BYTES, end - position))
                if not text:
                    return
                if not text.endswith(b"\n") and position + len(text) < end:
                    text += handle.readline(MAX_LINE_BYTES + 1)  # the line ends by `end`
                    if len(text) - text.rfind(b"\n") - 1 > MAX_LINE_BYTES:
                        raise Unsplittable(LONG_LINE)
                position += len(text)
                base = before
                for batch in read_batches([self.file.path], self.source, self.attributes,
                                          self.time_unit, only_types=self.used,
                                          stamp_only=self.timing, text=text):
                    before += batch.read
                    self.rows_seen += batch.read
                    self.covered.add(*batch.covered)
                    if own:
                        self.own.read += batch.read
                        self.own.rejected.update(batch.rejected)
                        self.own.covered.add(*batch.covered)
                    frame = batch.columns()
                    if self.positions:
                        frame.data[EVENT_ID] = frame.data[EVENT_ID] + base
                    batch.stamp(self.timelines)
                    part = tagged_rows(frame, self.job, self.wanted)
                    if own and len(part):
                        stamps = part[EVENT_TS]
                        self.own.first = min(self.own.first, float(stamps[0]))
                        self.own.last = max(self.own.last, float(stamps[-1]))
                    yield part

    def back(self, region: Region, low: float) -> Columns:
        """The tagged rows before the region from a margin before `low` on (as Spark's range
        tasks read them: a guess of the bytes, doubled until it holds; each doubling reads
        only the lines before those already read, so that no line is read twice)."""
        size, margin = FIRST_MARGIN_BYTES, self.file.margin
        end, pieces, lines = region.start, [], 0  # the lines read: from `end` to the region
        while True:
            with open(self.file.path, "rb") as handle:
                start = max(region.data_start, line_start(handle, region.start - size))
            seen = self.rows_seen
            piece = Columns.concat([p for p in self.chunks(start, end, 0) if len(p)],
                                   EMPTY_POOL_COLUMNS)
            lines += self.rows_seen - seen
            if self.positions and len(piece):  # the region's first row is row `before`
                piece.data[EVENT_ID] = piece.data[EVENT_ID] + (region.before - lines)
            pieces = [piece, *pieces] if len(piece) else pieces
            end = start
            if start <= region.data_start or (pieces and pieces[0][EVENT_TS][0] < low - margin):
                return Columns.concat(pieces, EMPTY_POOL_COLUMNS)
            size *= 2


class CellMatching:
    """Tagged rows taken in time order (`add`), each cell from `low` to `high` matched (by
    `match(pool, owned)`) once the rows a margin past it are in, over the rows within a
    margin of it; the rows no later cell needs released."""

    def __init__(self, file: FileInput, low: float, match: Callable[[Columns, tuple], None]):
        self.cells, self.margin = file.cells, file.margin
        self.low, self.high = low, math.inf
        self.latest = -math.inf
        self._match = match
        self._held: list[Columns] = []

    def add(self, part: Columns) -> None:
        """More rows; `Unordered` if they are not in time order after the rows before."""
        stamps = part[EVENT_TS]
        if not len(stamps):
            return
        if stamps[0] < self.latest or np.any(np.diff(stamps) < 0):
            raise Unordered
        self.latest = float(stamps[-1])
        self._held.append(part)
        ready = self.latest - self.margin  # cells ending before it are complete
        cut = self.cells.start(float(self.cells.index(np.array([ready]))[0]))
        if cut == ready:  # rows at the cell's end plus a margin may still come
            cut = self.cells.start(float(self.cells.index(np.array([ready]))[0]) - 1)
        self._match_until(min(cut, self.high))

    def finish(self) -> None:
        """Every cell left up to `high` matched (the input read that far, or to its end)."""
        self._match_until(self.high)
        self._held = []

    def _match_until(self, cut: float) -> None:
        if cut <= self.low:
            return
        pool = joined_releasing(self._held, EMPTY_POOL_COLUMNS)
        stamps = pool[EVENT_TS]
        owned = stamps[np.searchsorted(stamps, self.low, "left"):
                       np.searchsorted(stamps, cut, "left")]
        for index in np.unique(self.cells.index(owned)):
            start, end = self.cells.start(index), self.cells.start(index + 1)
            rows = slice(int(np.searchsorted(stamps, start - self.margin, "left")),
                         int(np.searchsorted(stamps, end + self.margin, "right")))
            self._match(pool.take(rows), (start, end))
        self.low = cut
        if math.isfinite(cut):
            self._held = [pool.take(slice(int(np.searchsorted(stamps, cut - self.margin,
                                                              "left")), None))]


def match_region(region: Region, file: FileInput, job: Job, data: Mapping[str, Any],
                 writer: Any, figures: RangeFigures) -> RangeRead:
    """The cells `region` owns matched into `writer`, their figures added to `figures`; what
    the region's own lines held. `Unordered` if its rows or margins are out of time order,
    `Unsplittable` if it holds another number of rows than `region.rows` says (when known)
    or a line too long."""
    reader = RangeReader(job, data, file, stamped=region.start <= region.data_start)
    sharing = used_sharing(job)

    def match(pool: Columns, owned: tuple[float, float]) -> None:
        match_range(pool, replace(job, span=reader.covered.span), owned, writer,
                    figures.totals, figures.built, figures.seconds, sharing, figures.partials)

    own = reader.chunks(region.start, region.end, region.before, own=True)
    first: list[Columns] = []
    for part in own:  # up to the first tagged row, which says where the region's cells begin
        first.append(part)
        if len(part):
            break
    low = -math.inf if region.number == 0 else file.cells.after(reader.own.first)
    matching = CellMatching(file, low, match)
    if region.number and math.isfinite(low):
        matching.add(reader.back(region, low))
    for part in _chained(first, own):
        matching.add(part)
    if region.rows and reader.own.read != region.rows:
        raise Unsplittable(BLANK_LINES)
    if not region.last and low < math.inf:
        for part in reader.chunks(region.end, region.size, region.before + region.rows):
            if len(part) and math.isinf(matching.high):
                matching.high = file.cells.after(float(part[EVENT_TS][0]))
            matching.add(part)
            if matching.latest > matching.high + file.margin:
                break
    matching.finish()
    return reader.own


def _chained(first: list[Columns], rest: Iterator[Columns]) -> Iterable[Columns]:
    yield from first
    yield from rest


def file_input(job: Job, data: Mapping[str, Any], events: Sequence[str],
               region_rows: int) -> FileInput | None:
    """The file and its cells when the input is one plain CSV file the in-process reader
    reads by byte range; None otherwise (or when its column names cannot be read here: the
    reader says why on the other path). The cells are wide enough for the window margin and
    for about `region_rows` tagged rows, as the file's first chunk holds them read as the
    first range reads them (stamped: the types only strict contiguity reads are not tagged)."""
    from cepplan.sources.text_input import LineTooLong

    if len(events) != 1 or not plain_csv(data, events):
        return None
    source = data["reader"]["source"]
    try:
        names = (header_columns(events[0]) if source.get("header", True)
                 else list(source.get("columns") or ()))
    except (LineTooLong, OSError, UnicodeError):
        return None
    if not names:
        return None
    margin = window_margin(job)
    probe = FileInput(events[0], tuple(names), Cells(margin), margin)
    whole = _regions(probe, data, 1)[0]
    reader = RangeReader(job, data, probe, stamped=True)
    with open(events[0], "rb") as handle:
        end = line_start(handle, whole.start + CHUNK_BYTES)
    stamps = np.concatenate([p[EVENT_TS] for p in reader.chunks(whole.start, end, 0)]
                            or [np.empty(0)])
    width = margin
    if len(stamps) > 1 and stamps[-1] > stamps[0]:
        width = max(margin, region_rows * float(stamps[-1] - stamps[0]) / len(stamps))
    return replace(probe, cells=Cells(width))


def _regions(file: FileInput, data: Mapping[str, Any], count: int) -> list[Region] | None:
    """The file in `count` ranges of about the same size (rows counted when more than one;
    None when its line ends are not plain)."""
    header = bool(data["reader"]["source"].get("header", True))
    size = os.path.getsize(file.path)
    if count == 1:
        with open(file.path, "rb") as handle:
            start = line_start(handle, 1) if header else 0
        return [Region(0, file.path, start, size, start, size, 0, 0, file.names, True)]
    return line_regions(file.path, file.names, header, [size * i // count for i in range(count)])


def match_by_byte_range(file: FileInput, job: Job, data: dict[str, Any], writer: Any,
                        figures: RangeFigures, workers: int, output_format: str,
                        spill: Path, standby: Standby | None = None
                        ) -> tuple[list[RangeRead], int]:
    """The file matched range by range: the first here, the others in up to `workers - 1`
    worker processes (one range each, at least `range_cut.MIN_RANGE_BYTES`), each writing its
    own part files, renamed into `writer`'s output as part 1, 2, ... in range order
    (`standby`: processes spawned ahead, taken first). (what
    each range held, the processes that matched); `Unordered` or `Unsplittable` as
    `match_region` (the output then void)."""
    found = _regions(file, data, range_count(file.path, workers))
    if found is None:
        raise Unsplittable("the CSV file has lines ended by a lone carriage return")
    share = max(1, budget() // len(found))
    keep_freed_heap()  # each chunk's text and arrays: reused, not mapped afresh
    with _RangeWorkers(found[1:], file, data, output_format, share, spill,
                       standby) as started:
        with _memory_budget(share):
            reads = [match_region(found[0], file, job, data, writer, figures)]
        for worker in started:
            read, more = worker.result()
            figures.add(more)
            reads.append(read)
            writer.adopt_parts(worker.parts / "matches")
    return reads, len(found)


@contextlib.contextmanager
def _memory_budget(share: int) -> Iterator[None]:
    """The matcher's budget set to `share` bytes in this process for the block."""
    before = os.environ.get(MEMORY_VARIABLE)
    os.environ[MEMORY_VARIABLE] = str(share)
    try:
        yield
    finally:
        if before is None:
            del os.environ[MEMORY_VARIABLE]
        else:
            os.environ[MEMORY_VARIABLE] = before


@dataclass
class _RangeWorker:
    """One spawned process matching one range into its part files (under `parts`), its
    outcome pickled into `result`."""

    process: Any
    parts: Path
    outcome: Path

    def result(self) -> tuple[RangeRead, RangeFigures]:
        """The range's counts and figures once the process ended; its error raised."""
        self.process.join()
        if not self.outcome.exists():
            raise WorkerError(f"a worker process matching a byte range of the input ended "
                              f"unexpectedly (exit code {self.process.exitcode}): out of "
                              "memory? Try fewer --workers or a lower CEPPLAN_MATCH_MEMORY")
        kind, value = pickle.loads(self.outcome.read_bytes())  # written by our own worker
        if kind == "error":
            raise value
        if kind == "unordered":
            raise Unordered
        if kind == "unsplittable":
            raise Unsplittable(value)
        return value


class _RangeWorkers:
    """A context of one spawned worker per range, started on entry and killed if the block
    ends with an exception (an interruption included)."""

    def __init__(self, found: list[Region], file: FileInput, data: Mapping[str, Any],
                 output_format: str, share: int, spill: Path, standby: Standby | None):
        self.found, self.file, self.data, self.standby = found, file, data, standby
        self.output_format, self.share, self.spill = output_format, share, spill
        self.started: list[_RangeWorker] = []

    def __enter__(self) -> list[_RangeWorker]:
        if not self.found:
            return []
        job_file = self.spill / "job.json"
        job_file.write_text(json.dumps(self.data))
        context = multiprocessing.get_context("spawn")
        for region in self.found:
            parts = self.spill / f"range-{region.number:05d}"
            outcome = self.spill / f"range-{region.number:05d}.outcome"
            task = (str(job_file), region, self.file, self.output_format, self.share,
                    str(parts), str(outcome), os.getpid())
            process = self.standby.take(task) if self.standby is not None else None
            if process is None:
                process = context.Process(target=serve_region, args=task, daemon=True,
                                          name=f"cepplan-worker-{region.number}")
                process.start()
            self.started.append(_RangeWorker(process, parts, outcome))
        return self.started

    def __exit__(self, kind: Any, *_rest: Any) -> None:
        if kind is None:
            return
        for worker in self.started:
            with contextlib.suppress(OSError):
                worker.process.kill()
        for worker in self.started:
            worker.process.join()


def serve_region(job_file: str, region: Region, file: FileInput, output_format: str, share: int,
           parts: str, outcome: str, parent: int) -> None:
    """A worker: its range matched into its own part files under `parts` (a `MatchWriter`'s
    staging folder, part `part-NNNNN` numbered by the range), its outcome (counts and figures,
    or the error that stopped it) pickled into `outcome`."""
    if not started_as_worker(share, parent):
        return
    from cepplan.engine_adapter.local.writer import MatchWriter

    data = json.loads(Path(job_file).read_text())
    job = job_from_json(data)
    folder = Path(parts)
    folder.mkdir()
    output = MatchWriter(folder, output_format, job, part=f"part-{region.number:05d}")
    figures = RangeFigures.empty(job)
    try:
        with watched_output(folder, output_format):
            read = match_region(region, file, job, data, output, figures)
        output.close()
        figures.worker_peaks[os.getpid()] = peak_resident()
        result: tuple = ("done", (read, figures))
    except Unordered:
        result = ("unordered", None)
    except Unsplittable as err:
        result = ("unsplittable", str(err))
    except Exception as err:  # raised by the parent
        result = ("error", sendable(err))
    finally:
        output.close(complete=False)  # after `close`: already closed
    if result[0] != "done":  # its parts void: their room freed for the outcome (a full disk)
        shutil.rmtree(folder, ignore_errors=True)
    staged = Path(outcome + ".tmp")
    staged.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    staged.rename(outcome)
