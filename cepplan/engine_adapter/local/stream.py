"""A live stream through the in-process engine: the batch engine's time-range matching run per
micro-batch, as the watermark advances (docs/engine.md, "Live streams").

Event time is `ts`; the watermark is the largest `ts` read minus `max_delay`; an event below it
is late (counted, handed back to be written aside, never matched). When the watermark moves
from w0 to w1, every pattern's matches whose latest event lies in [w0, w1) are emitted, over
the events below w1 and a margin before w0 (`engine.match_range`, which owns exactly those
matches): the matches equal the batch run's by construction. A pattern whose negation can
look past its latest event (a trailing `NOT`, an AND's) owns them a window later, once the
watermark has passed every event that could block them. State: the tagged events of that
margin and those above the watermark, bounded by the window and the delay, never the stream.
A count window's margin is in positions, numbered as the watermark passes the events
(`stream_positions`): every event above the watermark is held until then.

A new job (another plan of the same workload) takes over between two micro-batches, at the
watermark w reached (`switch`): matches whose latest event lies below w stay the old job's,
which finishes them (a look-ahead pattern's a window later), and the new job owns the rest.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from cepplan.engine_adapter.local.engine import ROWS_READ, count_pattern, span_figures
from cepplan.engine_adapter.local.partial_counts import partial_metrics
from cepplan.engine_adapter.local.range_match import (
    EMPTY_POOL_COLUMNS,
    match_range,
    tagged_rows,
    wanted_columns,
    window_margin,
)
from cepplan.engine_adapter.local.source import Batch
from cepplan.engine_adapter.local.stream_positions import StreamPositions
from cepplan.engine_adapter.local.totals import PatternTotals
from cepplan.engine_adapter.runtime.job import Covered, Job
from cepplan.engine_adapter.runtime.memory import peak_resident
from cepplan.engine_adapter.runtime.shared_nodes import used_sharing
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE


@dataclass
class _Phase:
    """One job's part of the stream: the matches whose latest event lies in [start, end)."""

    job: Job
    groups: list[tuple[float, Job]]
    sharing: Any
    margin: float
    start: float = -math.inf
    end: float = math.inf
    built: dict[str, list[int]] = field(default_factory=dict)  # partial matches, by prefix

    @classmethod
    def of(cls, job: Job, start: float = -math.inf) -> _Phase:
        sharing = used_sharing(job)
        return cls(job, _lag_groups(job, sharing is not None), sharing, window_margin(job), start)

    @property
    def reach(self) -> float:
        """How far behind the watermark its events must still be held."""
        return max(lag for lag, _ in self.groups) + self.margin


class StreamMatcher:
    """The job over events as they arrive: `add` each batch read (with its arrival wall
    time), `advance` after each micro-batch, `finish` at the end of the input. Matches go to
    `writer` (`write(pattern, PartitionOutput)`, `arrivals(ids, times)` before each range)."""

    def __init__(self, job: Job, max_delay: float, writer: Any, *, positional_ids: bool):
        self.delay = max_delay
        self.writer = writer
        self.positional = positional_ids  # ids are row positions: continued over the reads
        # count windows' clock: every event read is held until the watermark numbers it
        self.positions = StreamPositions(job.patterns) if any(
            p.window_events for p in job.patterns) else None
        self.wanted = wanted_columns(job) + (self.positions.columns if self.positions else [])
        self.phases = [_Phase.of(job)]  # the current job last; earlier ones finishing
        self.observers: list[Callable[[Columns], None]] = []  # see every good row read
        # which rows are this matcher's (on Spark, its key group's): the others count for the
        # watermark, positions and span only, neither kept nor counted late
        self.owned: Callable[[Columns], np.ndarray] | None = None
        self.held: list[Columns] = []  # tagged events not yet released
        self.arrived: list[np.ndarray] = []  # their arrival wall times, part by part
        self.state_rows = 0
        self.latest = -math.inf  # the largest ts read (every event type)
        self.evaluated = -math.inf  # the watermark up to which matches are emitted
        self.covered = Covered()  # the non-late events' time
        self.rows_before = 0  # rows read by earlier reads (position ids continue over them)
        self.counts: Counter = Counter()
        self.late: Counter = Counter()
        self.totals = {p.name: PatternTotals() for p in job.patterns}
        self.partials: dict[int, int] = {}
        self.seconds: dict[str, float] = {"read": 0.0, "tag": 0.0}

    @property
    def job(self) -> Job:
        """The job matching from the watermark on."""
        return self.phases[-1].job

    @property
    def built(self) -> dict[str, list[int]]:
        """The partial matches the current job built, per pattern and join prefix length."""
        return self.phases[-1].built

    @built.setter
    def built(self, counts: dict[str, list[int]]) -> None:
        self.phases[-1].built = counts

    @property
    def watermark(self) -> float:
        return self.latest - self.delay

    def switch(self, job: Job) -> None:
        """Let `job` (another plan of the same workload) own every match whose latest event
        lies at or above the watermark reached; the current job finishes those below it.
        The held events are tagged again for the new job."""
        boundary = self.evaluated
        self.phases[-1].end = boundary
        self.phases.append(_Phase.of(job, boundary))
        self._drop_finished()
        if self.held:
            pool, arrived = self.retained()
            plain = pool.take(slice(None), [c for c in pool.columns if "\t" not in c])
            self.held = [tagged_rows(plain, job, self.wanted, every=self.positions is not None)]
            self.arrived = [arrived]

    def phase_bounds(self) -> list[tuple[float, float, dict[str, list[int]]]]:
        """Each job's part of the stream, oldest first: (start, end, partial matches built),
        for `resume_phases` (a state kept between micro-batches, on Spark)."""
        return [(p.start, p.end, p.built) for p in self.phases]

    def resume_phases(self, jobs: list[Job],
                      bounds: list[tuple[float, float, dict[str, list[int]]]]) -> None:
        """Put back the jobs (oldest first) and parts `phase_bounds` recorded."""
        self.phases = [replace(_Phase.of(job, start), end=end, built=built)
                       for job, (start, end, built) in zip(jobs, bounds, strict=True)]

    def add(self, batches: Iterable[Batch], arrived: float) -> Columns | None:
        """One read's batches (a file, or the lines of a micro-batch), arrived at wall time
        `arrived`: the late events returned (None: none), the others tagged and kept."""
        late_parts, read = [], 0
        for batch in batches:
            clock = time.perf_counter()
            read += batch.read
            self.counts[ROWS_READ] += batch.read
            self.counts.update(batch.rejected)
            rows = batch.columns()
            if self.positional and len(rows):
                rows.data[EVENT_ID] = rows.data[EVENT_ID] + self.rows_before
            stamps = rows[EVENT_TS] if len(rows) else np.empty(0)
            before = np.maximum.accumulate(np.concatenate([[self.latest], stamps]))[:-1]
            late = stamps < before - self.delay
            if len(stamps):
                self.latest = max(self.latest, float(stamps.max()))
            mine = self.owned(rows) if self.owned is not None else np.ones(len(rows), bool)
            if late.any():
                if (late & mine).any():
                    late_parts.append(rows.take(late & mine))
                    self.late.update(rows.take(late & mine)[EVENT_TYPE].tolist())
                rows, mine = _kept(rows, ~late), mine[~late]
            if len(rows):
                self.covered.add(float(rows[EVENT_TS].min()), float(rows[EVENT_TS].max()))
                for observe in self.observers:
                    observe(rows)
            now = time.perf_counter()
            self.seconds["read"] += now - clock
            if not mine.all():
                rows = _kept(rows, mine)
            part = tagged_rows(rows, self.job, self.wanted, every=self.positions is not None)
            if self.positions is not None:
                part = self.positions.unnumbered(part)
            self.seconds["tag"] += time.perf_counter() - now
            if len(part):
                self.held.append(part)
                self.arrived.append(np.full(len(part), arrived))
                self.state_rows += len(part)
        self.rows_before += read
        return Columns.concat(late_parts, EMPTY_POOL_COLUMNS) if late_parts else None

    def advance(self, *, final: bool = False) -> int:
        """Emit every match the watermark decides (`final`: the end of the input, every
        match the events decide, as the batch run). Returns the tagged rows kept after."""
        high = math.inf if final else self.watermark
        if high <= self.evaluated or not self.held:
            self.evaluated = max(self.evaluated, high)
            return self.state_rows
        pool, arrived = self._pool()
        stamps = pool[EVENT_TS]
        tagged = np.ones(len(pool), dtype=bool)
        if self.positions is not None:  # then the events no variable binds are held too
            self.positions.number(pool, self.evaluated, high)
            tagged = np.logical_or.reduce([pool[c] for c in pool.columns if "\t" in c])
        below = (stamps < high) & tagged
        now = pool.take(below) if not below.all() else pool
        self.writer.arrivals(now[EVENT_ID], arrived[below])
        span = self.covered.span if final else (self.covered.first, high)
        for phase in self.phases:
            for lag, job in phase.groups:
                owned = (max(self.evaluated - lag, phase.start), min(high - lag, phase.end))
                if owned[0] < owned[1]:
                    match_range(now, replace(job, span=span), owned, self.writer,
                                 self.totals, phase.built, self.seconds, phase.sharing,
                                 self.partials)
        self.evaluated = high
        self._drop_finished()
        keep = stamps >= high - max(p.reach for p in self.phases)
        if self.positions is not None:
            keep = (stamps >= high) | (tagged & (keep | self.positions.reached(pool)))
        self.held = [pool.take(keep)] if keep.any() else []
        self.arrived = [arrived[keep]] if keep.any() else []
        self.state_rows = int(np.count_nonzero(keep))
        return self.state_rows

    def _drop_finished(self) -> None:
        """Forget the replaced jobs that have emitted every match they own."""
        self.phases = [p for p in self.phases[:-1] if not all(
            self.evaluated - lag >= p.end for lag, _ in p.groups)] + self.phases[-1:]

    def retained(self) -> tuple[Columns, np.ndarray]:
        """The events kept (tagged, not yet released) and their arrival wall times."""
        if not self.held:
            return Columns.concat([], EMPTY_POOL_COLUMNS), np.empty(0)
        return Columns.concat(self.held, EMPTY_POOL_COLUMNS), np.concatenate(self.arrived)

    def _pool(self) -> tuple[Columns, np.ndarray]:
        """The kept events in (ts, id) order, with their arrival times."""
        pool, arrived = self.retained()
        order = np.lexsort((pool[EVENT_ID], pool[EVENT_TS]))
        return pool.take(order), arrived[order]

    def metrics(self, data: dict[str, Any]) -> dict[str, Any]:
        """metrics.json's figures, as the batch run's (`engine._run_by_time_range`)."""
        counts = Counter(self.counts)
        out: dict[str, Any] = {"engine": "local", "rows_read": counts.pop(ROWS_READ, 0),
                               "rows_rejected": dict(counts), "rows_to_matchers": 0,
                               "rows_to_matchers_by_pattern": {}, "rows_shuffled": 0,
                               "matches": {}, "kleene_cap_hits": {}, "negation_held_back": {},
                               "input_span": span_figures(self.covered)}
        for spec in self.job.patterns:
            total = self.totals[spec.name]
            count_pattern(out, spec.name, total.sent, total.matches, total.cap_hits,
                          total.held_back, total.splits, lambda _text: None)
        if self.built:  # the current job's, over the event time since it took over
            since = max(self.covered.first, self.phases[-1].start)
            span = max(self.covered.last - since, 0.0)
            out["partial_matches"] = partial_metrics(
                self.job, self.built, span,
                self.positions.time_spans(self.job.patterns, span) if self.positions else None)
        out["plan"] = data.get("plan", {})
        out["seconds"] = {k: round(v, 3) for k, v in self.seconds.items()}
        out["peak_memory_bytes"] = peak_resident()
        return out


def _kept(rows: Columns, mask: np.ndarray) -> Columns:
    """The rows of `mask`, their types still as codes."""
    return Columns({n: v[mask] for n, v in rows.data.items()}, rows.codes[mask], rows.types)


def looks_ahead(spec: PatternSpec) -> bool:
    """Whether a negation of the pattern can block a match after its latest event: a
    trailing `NOT` of a SEQ, or any `NOT` of an AND (its gap is the whole window)."""
    if not spec.negated:
        return False
    if spec.operator != "SEQ":
        return True
    last = max(o.position for o in spec.positive)
    return any(n.position > last for n in spec.negated)


def _lag_groups(job: Job, shared: bool) -> list[tuple[float, Job]]:
    """The patterns by how far behind the watermark their matches are owned: 0, or a window
    for those that look ahead. A shared plan is matched together, at its largest lag."""
    lags = {p.name: (p.window or 0.0) if looks_ahead(p) else 0.0 for p in job.patterns}
    if shared or len(set(lags.values())) == 1:
        return [(max(lags.values()), job)]
    groups: dict[float, list[PatternSpec]] = {}
    for spec in job.patterns:
        groups.setdefault(lags[spec.name], []).append(spec)
    return [(lag, replace(job, patterns=tuple(specs))) for lag, specs in groups.items()]
