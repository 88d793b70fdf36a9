"""Run a job in-process: the Spark job's stages over pyarrow batches (docs/matching.md).

read (streaming, bad rows counted by reason) -> tag (filter push-down; only tagged rows and
their needed columns are kept) -> per pattern, children first: acquisition semi-joins ->
group by key -> the matcher runtime -> matches written as rendered -> complex events tagged
into the pool for the patterns above -> metrics.json. Same metrics counts as the Spark job.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cepplan.engine_adapter.local.byte_ranges import (
    LONG_LINE,
    FileInput,
    Unordered,
    Unsplittable,
    file_input,
    match_by_byte_range,
)
from cepplan.engine_adapter.local.pandas_hold import hold_pandas_back
from cepplan.engine_adapter.local.partial_counts import added, partial_metrics
from cepplan.engine_adapter.local.range_match import (
    EMPTY_POOL_COLUMNS,
    match_range,
    tagged_rows,
    wanted_columns,
    window_margin,
)
from cepplan.engine_adapter.local.slices import slices
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.workers import RangeFigures, range_matching
from cepplan.engine_adapter.local.writer import staged_output
from cepplan.engine_adapter.runtime.acquire import acquire
from cepplan.engine_adapter.runtime.contiguity import Timeline, stamp_only, timelines
from cepplan.engine_adapter.runtime.job import (
    Covered,
    Job,
    PartitionOutput,
    evaluate_pieces,
    job_from_json,
)
from cepplan.engine_adapter.runtime.memory import peak_resident
from cepplan.engine_adapter.runtime.positions import PositionCounter, counted_keys
from cepplan.engine_adapter.runtime.shared_nodes import used_sharing
from cepplan.engine_adapter.runtime.table import Columns, concat_frames, joined_releasing
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

if TYPE_CHECKING:  # the time-range path runs on NumPy `Columns`; pandas only for the others
    import pandas as pd

    from cepplan.engine_adapter.local.standby import Standby



REGION_ROWS = 1 << 13  # tagged rows matched and released together, time-ordered input


def run_local_job(data: dict[str, Any], events: Sequence[str], out: Path, *,
                  output_format: str = "jsonl", covering: Mapping[str, Any] | None = None,
                  say: Callable[[str], None] = print, workers: int = 1,
                  standby: Standby | None = None) -> dict[str, Any]:
    """Evaluate every pattern of the job over the event files, and the consumer queries of
    the plan's `covering` section if given; write matches, results and metrics.json into
    `out` (replaced only on success). Returns the metrics. Time-ordered input of windowed
    patterns is matched range by range by up to `workers` processes (`local.workers`);
    every other path by this process alone, said in `metrics.json`'s `workers`. `standby`:
    byte-range workers spawned ahead (`local.standby`), ended here if not used."""
    try:
        return _run_job(data, events, out, output_format, covering, say, workers, standby)
    finally:
        if standby is not None:
            standby.close()


def _run_job(data: dict[str, Any], events: Sequence[str], out: Path, output_format: str,
             covering: Mapping[str, Any] | None, say: Callable[[str], None], workers: int,
             standby: Standby | None) -> dict[str, Any]:
    """`run_local_job`'s work."""
    job = job_from_json(data)
    if not covering and streamable(job):
        try:
            return _run_in_time_order(job, data, events, out, output_format, say, workers,
                                      standby)
        except (_OutOfOrder, Unordered):
            why = "the events are not in time order"
            say(f"{why}: matching them after reading them all")
    else:
        why = _why_one_worker(job, covering)
        if workers > 1:
            say(f"matching with one worker: {why}")
    import pandas as pd

    from cepplan.engine_adapter.local.contexts import LocalContexts
    from cepplan.engine_adapter.local.shared import node_metrics, shared_group
    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan

    seconds: dict[str, float] = {"read": 0.0, "tag": 0.0}
    stage = LocalContexts.of(job)
    observers: list[Callable[[pd.DataFrame], None]] = [] if stage is None else [stage.observe]
    consumed: list[pd.DataFrame] = []  # the rows the consumer queries read
    if covering:  # OR-Tools imported only when there are consumer queries
        from cepplan.engine_adapter.local.covering_io import results_lines
        from cepplan.engine_adapter.runtime.covering_run import covering_part, run_covering

        observers.append(lambda batch: consumed.append(covering_part(batch, covering)))
    counter = PositionCounter(counted_keys(job.patterns))
    if counter.keyings:  # count windows: every event of a partition counts (`positions`)
        observers.append(counter.observe)
    covered = Covered()
    pool, rows_read, rejected = _read_and_tag(job, data["reader"], events, seconds, observers,
                                              covered)
    pool = counter.stamp(pool)
    job = replace(job, span=covered.span)  # negations decided within the input's time
    if stage is not None:
        stage.job = job
    say(f"read {rows_read} rows ({sum(rejected.values())} rejected), "
        f"{len(pool)} tagged for the patterns")
    consumers = {o.type for p in job.patterns for o in p.operands}
    metrics: dict[str, Any] = {"engine": "local", "rows_read": rows_read,
                               "rows_rejected": dict(rejected), "rows_to_matchers": 0,
                               "rows_to_matchers_by_pattern": {}, "rows_shuffled": 0,
                               "matches": {}, "kleene_cap_hits": {}, "negation_held_back": {},
                               "input_span": span_figures(covered), "workers": 1,
                               "reading": f"by this process: {why}"}
    derived: dict[str, list[dict]] = {}
    sharing, shared, partials = sharing_plan(job), {}, {}
    partial_counts: dict[str, list[int]] = {}  # pattern -> partial matches per join prefix
    with staged_output(out, output_format, job) as (writer, finish):
        if stage is not None:  # deriving patterns first (docs/contexts.md)
            clock = time.perf_counter()
            found = stage.derive(pool)
            seconds["contexts"] = time.perf_counter() - clock
            derived = found.matches
            sharing = sharing_plan(job, alone=derived)  # the stage evaluated those already
            for name, objects in derived.items():
                text = "".join(json.dumps(o) + "\n" for o in objects)
                writer.write(name, PartitionOutput(text, len(objects), None, 0))
                count_pattern(metrics, name, stage.seen(name), len(objects), found.cap_hits[name],
                       found.held_back.get(name, 0), 0, say)
            say(f"contexts: {len(found.windows.frame())} windows derived")
            if found.complex_frames:
                pool = _with_tags(pool, pd.concat(found.complex_frames, ignore_index=True), job)
        for spec in (p for p in job.patterns if p.name not in derived):
            clock = time.perf_counter()
            labels = [c for c in pool.columns if c.startswith(spec.name + "\t")]
            frame, masks = pool, {c: pool[c].to_numpy(dtype=bool) for c in labels}
            if stage is not None:  # push-down: only the rows inside its windows
                frame, masks = stage.push_down(pool, masks, spec)
            keep = acquire(frame, masks, spec)
            frame = frame.loc[keep, [c for c in frame.columns if "\t" not in c]]  # no tags
            seconds[f"acquire {spec.name}"] = time.perf_counter() - clock
            clock = time.perf_counter()
            count, hits, held, splits, made, built = 0, 0, 0, 0, [], []
            if spec.name in sharing.uses:  # the shared plan, together
                if spec.name not in shared:
                    shared.update(shared_group(pool, job, sharing, spec.name, consumers,
                                               partials, stage, slices))
                results = iter(shared.pop(spec.name))
            else:
                results = (out for group, own in slices(frame, spec)
                           for out in evaluate_pieces(group, job, spec, own=own,
                                                      with_complex=spec.name in consumers))
            for result in results:
                built = added(built, result.partials)  # before contexts keep what counts
                splits += result.splits
                if stage is not None:
                    result = stage.counted(result, spec)
                writer.write(spec.name, result)
                count += result.count
                hits += result.cap_hits
                held += result.held_back
                if result.complex is not None:
                    made.append(result.complex)
            seconds[f"match {spec.name}"] = time.perf_counter() - clock
            count_pattern(metrics, spec.name, int(keep.sum()), count, hits, held, splits, say)
            if built:
                partial_counts[spec.name] = built
            if stage is not None:
                stage.done(spec, sum(map(len, made)))
            if made:
                pool = _with_tags(pool, pd.concat(made, ignore_index=True), job)
            pool = _unread_dropped(pool, job, spec.name)
        if stage is not None:
            metrics["contexts"] = stage.section(metrics["matches"])
        if covering:
            clock = time.perf_counter()
            run = run_covering(pd.concat(consumed, ignore_index=True) if consumed else
                               pd.DataFrame(columns=[EVENT_TYPE, EVENT_TS, EVENT_ID]), covering)
            writer.write_results(results_lines(run.results))
            metrics["covering"] = run.metrics
            seconds["covering"] = time.perf_counter() - clock
            say(f"consumer queries: {run.metrics['executions_with_reuse']} operator executions "
                f"for {run.metrics['selections']} query windows")
        metrics["plan"] = data.get("plan", {})
        if sharing.uses:
            metrics["shared_nodes"] = node_metrics(job, sharing, partials, pool)
        if partial_counts:
            metrics["partial_matches"] = partial_metrics(job, partial_counts, _span(pool),
                                                         counter.time_spans(job.patterns))
        metrics["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
        metrics["peak_memory_bytes"] = peak_resident()
        finish(metrics)
    return metrics


class _OutOfOrder(Exception):
    """The events turned out not to be in time order after some time ranges were matched."""


def streamable(job: Job, *, counted: bool = False) -> bool:
    """Whether the job can be matched time range by time range as the events are read:
    every pattern has a window (`counted`: a count window too, whose positions a live stream
    numbers as its watermark passes the events), and none reads another's matches or
    contexts."""
    names = {p.name for p in job.patterns}
    return (all((p.window is not None and p.window > 0) or (counted and p.window_events)
                for p in job.patterns)
            and not any(o.type in names for p in job.patterns for o in p.operands)
            and not job.data.get("contexts"))


def _why_one_worker(job: Job, covering: Mapping[str, Any] | None) -> str:
    """Why the job is not matched range by range (in parallel), in the user's terms."""
    if covering:
        return "the plan has consumer queries"
    if job.data.get("contexts"):
        return "the plan has contexts"
    if any(p.window_events for p in job.patterns):
        return "a pattern has a count window (positions are numbered over the whole input)"
    if any(p.window is None or p.window <= 0 for p in job.patterns):
        return "a pattern has no window"
    return "a pattern reads another pattern's matches"


def _run_in_time_order(job: Job, data: dict[str, Any], events: Sequence[str], out: Path,
                       output_format: str, say: Callable[[str], None],
                       workers: int, standby: Standby | None = None) -> dict[str, Any]:
    """The job over events expected in time order: one plain CSV file by byte range, each
    range read by the process that matches it (`local.byte_ranges`), or as one range by
    this process when its ranges' rows cannot be counted (the same files); other input read
    here and matched by time range (`_run_by_time_range`). `metrics.json`'s `reading` says
    which."""
    hold_pandas_back()  # NumPy columns only: pandas is loaded when a stage needs it
    file = file_input(job, data, events, REGION_ROWS)
    why = "the input is not one plain CSV file"
    for count in (workers, 1) if file is not None else ():
        try:
            return _run_by_byte_range(file, job, data, out, output_format, say, count,
                                      reading="by byte range in each worker" if count == workers
                                      else f"by this process: {why}", standby=standby)
        except Unsplittable as err:
            why = str(err)
            if why == LONG_LINE or count == 1:
                break
            say(f"reading the input in this process: {why}")
    if workers > 1:
        say(f"reading the input in this process: {why}")
    return _run_by_time_range(job, data, events, out, output_format, say, workers,
                              reading=f"by this process: {why}")


def _run_by_byte_range(file: FileInput, job: Job, data: dict[str, Any], out: Path,
                       output_format: str, say: Callable[[str], None], workers: int,
                       reading: str, standby: Standby | None = None) -> dict[str, Any]:
    """The file matched by byte range in up to `workers` processes, each reading its own
    (`local.byte_ranges`); the output the same byte for byte whatever `workers`."""
    figures = RangeFigures.empty(job)
    with staged_output(out, output_format, job) as (writer, finish):
        reads, processes = match_by_byte_range(file, job, data, writer, figures, workers,
                                               output_format, writer.spill_directory(),
                                               standby)
        rejected: Counter = Counter()
        covered = Covered()
        for read in reads:
            rejected.update(read.rejected)
            covered.add(*read.covered.span)
        metrics = _new_metrics()
        metrics["rows_read"] = sum(read.read for read in reads)
        metrics["rows_rejected"] = dict(rejected)
        firsts = [read.first for read in reads if read.first <= read.last]
        span = (max(read.last for read in reads) - min(firsts)) if firsts else 0.0
        say(f"read {metrics['rows_read']} rows ({sum(rejected.values())} rejected), "
            f"matched by time range as read, by {processes} "
            f"worker{'s' if processes > 1 else ''}, each reading its own byte range")
        _range_metrics(metrics, job, data, figures, covered, span, processes, say)
        metrics["reading"] = reading
        finish(metrics)
    return metrics


def _new_metrics() -> dict[str, Any]:
    """metrics.json's counts before any row is read (the in-process engine's layout)."""
    return {"engine": "local", "rows_read": 0, "rows_rejected": {}, "rows_to_matchers": 0,
            "rows_to_matchers_by_pattern": {}, "rows_shuffled": 0, "matches": {},
            "kleene_cap_hits": {}, "negation_held_back": {}}


def _range_metrics(metrics: dict[str, Any], job: Job, data: Mapping[str, Any],
                   figures: RangeFigures, covered: Covered, span: float, workers: int,
                   say: Callable[[str], None]) -> None:
    """The figures of matching by range into `metrics`: the input's span, the workers, each
    pattern's counts, shared nodes, partial matches, seconds and peak memory."""
    metrics["input_span"] = span_figures(covered)
    metrics["workers"] = workers
    for spec in job.patterns:
        total = figures.totals[spec.name]
        count_pattern(metrics, spec.name, total.sent, total.matches, total.cap_hits,
                      total.held_back, total.splits, say)
    sharing = used_sharing(job)
    if sharing is not None:
        from cepplan.engine_adapter.runtime.shared_plan import node_summaries

        metrics["shared_nodes"] = node_summaries(sharing, figures.partials, span)
    if figures.built:
        metrics["partial_matches"] = partial_metrics(job, figures.built, span)
    metrics["plan"] = data.get("plan", {})
    seconds = {**metrics.pop("seconds", {}), **figures.seconds}
    metrics["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
    metrics["peak_memory_bytes"] = peak_resident() + sum(figures.worker_peaks.values())


def _run_by_time_range(job: Job, data: dict[str, Any], events: Sequence[str], out: Path,
                       output_format: str, say: Callable[[str], None],
                       workers: int = 1, *, reading: str = "") -> dict[str, Any]:
    """The job over time-ordered events, matched and released range by range as they are
    read, so that memory holds about `REGION_ROWS` tagged rows and a margin, not the file
    (docs/engine.md, "Memory"); the ranges matched by up to `workers` processes, their
    matches written in range order. Raises `_OutOfOrder` (the output left unwritten) when
    an event comes earlier than a range already matched."""
    hold_pandas_back()  # NumPy columns only: pandas is loaded when a stage needs it
    seconds: dict[str, float] = {"read": 0.0, "tag": 0.0}
    counts: Counter = Counter()
    metrics = _new_metrics()
    figures = RangeFigures.empty(job)
    margin = window_margin(job)
    covered = Covered()  # the input's time so far: negations are decided within it
    with (staged_output(out, output_format, job) as (writer, finish),
          range_matching(match_range, job, data, writer, figures, workers,
                         output_format) as ranges):
        held: list[Columns] = []
        rows, low, latest, first = 0, -math.inf, -math.inf, None
        stamps = [] if used_sharing(job) else timelines(job.patterns, job.stages)
        for part in _tagged_batches(job, data["reader"], events, seconds, counts, plain=True,
                                    covered=covered, timelines=stamps):
            ts = part[EVENT_TS]
            if len(ts) and (ts[0] < latest or np.any(np.diff(ts) < 0)):
                raise _OutOfOrder
            first = ts[0] if first is None and len(ts) else first
            latest = ts[-1] if len(ts) else latest
            held.append(part)
            rows += len(part)
            if rows < REGION_ROWS or latest - margin <= low:
                continue
            pool = joined_releasing(held, EMPTY_POOL_COLUMNS)
            high = latest - margin
            ranges.match(pool, covered.span, (low, high))
            kept = int(np.searchsorted(pool[EVENT_TS], high - margin, "left"))
            held = [pool.take(slice(kept, None))]
            del pool  # the matched range's rows go while the next ones are read
            rows, low = len(held[0]), high
        pool = joined_releasing(held, EMPTY_POOL_COLUMNS)
        if len(pool):
            ranges.match(pool, covered.span, (low, math.inf))
        ranges.finish()
        metrics["rows_read"] = counts.pop(ROWS_READ, 0)
        metrics["rows_rejected"] = dict(counts)
        say(f"read {metrics['rows_read']} rows ({sum(counts.values())} rejected), "
            f"matched by time range as read, by {ranges.workers} "
            f"worker{'s' if ranges.workers > 1 else ''}")
        span = (latest - first) if first is not None else 0.0
        metrics["seconds"] = seconds
        _range_metrics(metrics, job, data, figures, covered, span, ranges.workers, say)
        metrics["reading"] = reading
        finish(metrics)
    return metrics


def count_pattern(metrics: dict[str, Any], name: str, sent: int, count: int, hits: int, held: int,
           splits: int, say: Callable[[str], None]) -> None:
    """One pattern's counts into the metrics (rows to matchers, matches, cap hits, matches
    held back, join pieces split off), said as progress (`cepplan run` warns of cuts and
    holds from the metrics)."""
    metrics["rows_to_matchers"] += sent
    metrics["rows_to_matchers_by_pattern"][name] = sent
    metrics["matches"][name] = count
    metrics["kleene_cap_hits"][name] = hits
    metrics["negation_held_back"][name] = held
    metrics.setdefault("chunk_splits", {})[name] = splits
    say(f"pattern {name}: {sent} rows to matchers, {count} matches")


def span_figures(covered: Covered) -> list[float] | None:
    """metrics.json's `input_span`: the first and last event's timestamps (None: no event)."""
    return [covered.first, covered.last] if covered.first <= covered.last else None


def _span(pool: pd.DataFrame) -> float:
    """The time span of the tagged rows."""
    ts = pool[EVENT_TS].to_numpy(dtype=np.float64)
    return float(ts.max() - ts.min()) if len(ts) else 0.0


def _read_and_tag(job: Job, reader: dict[str, Any], events: Sequence[str],
                  seconds: dict[str, float],
                  observers: Sequence[Callable[[pd.DataFrame], None]] = (),
                  covered: Covered | None = None) -> tuple[pd.DataFrame, int, Counter]:
    """All batches read and tagged; only rows some variable can bind are kept, with the
    columns the matchers read and one boolean column per variable tag. Each observer sees
    every batch's good rows first (the context stage's metrics, the consumer queries)."""
    import pandas as pd

    counts: Counter = Counter()
    parts = list(_tagged_batches(job, reader, events, seconds, counts, observers,
                                 covered=covered))
    pool = concat_frames(parts) if parts else pd.DataFrame(columns=EMPTY_POOL_COLUMNS)
    rows_read = counts.pop(ROWS_READ, 0)
    return pool, rows_read, counts


def _tagged_batches(job: Job, reader: dict[str, Any], events: Sequence[str],
                    seconds: dict[str, float], counts: Counter,
                    observers: Sequence[Callable[[pd.DataFrame], None]] = (), *,
                    plain: bool = False,
                    covered: Covered | None = None,
                    timelines: Sequence[Timeline] = ()) -> Iterator[pd.DataFrame | Columns]:
    """Each batch's tagged rows (`tagged_rows`), as read: NumPy `Columns` if `plain`, else
    pandas; rows read and rejected by reason are added to `counts` (rows read under
    `ROWS_READ`), the good rows' timestamps to `covered`. Seconds reading and tagging
    exclude the consumer's work between batches. Time-ordered `plain` batches are stamped
    by the `timelines` first (`contiguity`)."""
    wanted = wanted_columns(job) + [t.column for t in timelines]
    timing = stamp_only(job.patterns, job.stages, timelines)
    used = None if observers else {o.type for p in job.patterns for o in p.operands
                                   } - timing.types
    batches = read_batches(events, **reader, only_types=used, stamp_only=timing)
    while True:
        clock = time.perf_counter()
        batch = next(batches, None)
        if batch is None:
            break
        counts[ROWS_READ] += batch.read
        counts.update(batch.rejected)
        if covered is not None:
            covered.add(*batch.covered)
        frame = batch.columns() if plain else batch.events
        for observe in observers:
            observe(frame)
        now = time.perf_counter()
        seconds["read"] += now - clock
        batch.stamp(timelines)
        part = tagged_rows(frame, job, wanted)
        seconds["tag"] += time.perf_counter() - now
        yield part


ROWS_READ = "\trows read"  # no reject reason starts with a tab


def _unread_dropped(pool: pd.DataFrame, job: Job, done: str) -> pd.DataFrame:
    """The pool without the complex events no pattern after `done` reads: each carries its
    own events' text, so a hierarchy kept every level's (50 nested patterns: 22 GB)."""
    later = job.patterns[[p.name for p in job.patterns].index(done) + 1:]
    read = {o.type for p in later for o in p.operands}
    unread = [p.name for p in job.patterns if p.name not in read]
    gone = pool[EVENT_TYPE].isin(unread).to_numpy() if len(pool) else None
    if gone is None or not gone.any():
        return pool
    return pool.loc[~gone].reset_index(drop=True)


def _with_tags(pool: pd.DataFrame, made: pd.DataFrame, job: Job) -> pd.DataFrame:
    """The pool with a pattern's matches added as complex events, tagged like any event
    (an empty side is left out of the concatenation, whose dtypes pandas will stop taking
    from empty frames)."""
    import pandas as pd

    added = tagged_rows(made, job)
    if not len(added):
        return pool
    if not len(pool):
        columns = list(dict.fromkeys([*pool.columns, *added.columns]))
        return added.reindex(columns=columns).reset_index(drop=True)
    return pd.concat([pool, added], ignore_index=True)
