"""The range-local Spark plan: each task matches its own byte range of a time-ordered file.

Shipped in the job's runtime zip. When the input is one local CSV file in non-decreasing time
order, a task reads its byte range (`spark.read`'s splits) plus the neighbouring lines its
matches need (a margin of `local.engine.window_margin` either side, in time) and runs the in-process
engine's stages on them: tag, acquisition semi-joins, per-key matching, rendering, and the
part file written by the task itself. One Spark stage, no shuffle, no rows through the JVM.

A task owns the matches whose latest event falls in its time range [low, high): low is the
time of the first tagged row of its byte range (of the ranges after it, if it has none), high
the next range's low, so ties across a boundary go to one range. Rows read and rejected are
counted by the byte range that holds them, rows to matchers by the time range that owns them:
the in-process engine's counts. Row ids are positions: the driver counts the rows before each
range (the tasks check the count of their own); a mismatch, or tagged rows out of time order
anywhere (each task checks its rows and its margins, which overlap its neighbours'), makes
the attempt void: its output is dropped and the job runs the shuffle plan (docs/matching.md,
"The range-local plan").
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
from pyspark import SparkContext

from cepplan.engine_adapter.local.readable import not_installed
from cepplan.engine_adapter.runtime.job import Covered
from cepplan.engine_adapter.spark.read import (
    plain_csv_splits,
    read_lines,
)
from cepplan.sources.csv_ranges import Region, line_regions, line_start
from cepplan.workload.columns import EVENT_ID, EVENT_TS

ENABLED = "CEPPLAN_SPARK_RANGES"  # "0": always the shuffle plan
FIRST_MARGIN_BYTES = 64 << 10  # the first guess of a margin's size, doubled until it holds


def ranges_apply(context: SparkContext, data: Mapping[str, Any], events: Sequence[str]
                 ) -> bool:
    """Whether the job can try the range-local plan: a local master (the tasks see the
    driver's file) and `_eligible`."""
    return context.master.startswith("local") and _eligible(data, events)


def _eligible(data: Mapping[str, Any], events: Sequence[str]) -> bool:
    """One local CSV file the in-process reader reads, and a workload the in-process engine
    matches range by range (every pattern has a window; no contexts, consumer queries or
    patterns over other patterns' matches); CEPPLAN_SPARK_RANGES not 0."""
    if os.environ.get(ENABLED, "1") == "0" or len(events) != 1:
        return False
    if plain_csv_splits(data, events, 1) is None:  # None also when the reader cannot import
        return False
    try:  # the in-process engine and what it imports (orjson) on this Python
        from cepplan.engine_adapter.local.engine import streamable
    except ImportError as err:
        not_installed(err)
        return False
    from cepplan.engine_adapter.runtime.job import job_from_json

    return streamable(job_from_json(dict(data)))


def regions_ahead(data: Mapping[str, Any], events: Sequence[str]) -> Future | None:
    """`regions` for a local master's parallelism (the cores) counted in a thread while the
    JVM starts (the count reads the whole file); None when the plan cannot apply."""
    if not _eligible(data, events):
        return None
    parallelism = os.cpu_count() or 1
    pool = ThreadPoolExecutor(1)
    counted = pool.submit(lambda: (parallelism, regions(data, events, parallelism)))
    pool.shutdown(wait=False)  # the count runs on; `result()` waits for it
    return counted


def regions(data: Mapping[str, Any], events: Sequence[str], parallelism: int
            ) -> list[Region] | None:
    """The file's byte ranges aligned on lines, with the rows before each (`line_regions`);
    None when the file's line ends are not plain `\\n` or `\\r\\n`, or the file not one
    the in-process reader reads."""
    splits = plain_csv_splits(data, events, parallelism)
    if splits is None:
        return None
    return line_regions(splits[0].path, splits[0].names, splits[0].header,
                        [s.start for s in splits])


def run_ranges(context: SparkContext, data: dict[str, Any], found: list[Region], staging: str,
               output_format: str) -> dict[str, Any] | None:
    """Match every range in a task of its own, part files into `staging/matches`; the
    metrics (the in-process engine's counts), or None when the input turned out not to be
    in time order (the output is then void). When some range reads fewer rows than the
    driver counted lines (blank lines), the ranges run once more with the rows before each
    as the tasks counted them (their part files are rewritten)."""
    for _attempt in range(2):
        task = RangeTask(found, data, staging, output_format)
        # a plain RDD of range numbers: no query planning, code generation or Arrow transfer
        # in the JVM for a stage whose rows are a few numbers in and a few figures out
        texts = context.parallelize(range(len(found)), len(found)) \
            .mapPartitions(task).collect()
        figures = sorted((json.loads(text) for text in texts), key=lambda f: f["number"])
        if not all(f["ordered"] for f in figures):
            return None
        if all(f["rows_ok"] for f in figures):
            return _metrics(data, figures)
        # blank lines: the rows before each range as the tasks read them, and once more
        counts = [f["read"] for f in figures]
        before = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
        found = [replace(r, before=b, rows=n) for r, b, n in zip(found, before, counts,
                                                                  strict=True)]
    return None


def _metrics(data: Mapping[str, Any], figures: list[dict[str, Any]]) -> dict[str, Any]:
    """metrics.json from the tasks' figures, in the in-process engine's layout."""
    from cepplan.engine_adapter.local.partial_counts import added, partial_metrics
    from cepplan.engine_adapter.local.totals import PatternTotals
    from cepplan.engine_adapter.runtime.job import job_from_json
    from cepplan.engine_adapter.runtime.shared_nodes import used_sharing
    from cepplan.engine_adapter.runtime.shared_plan import node_summaries

    rejected: Counter = Counter()
    totals = {p["name"]: PatternTotals() for p in data["patterns"]}
    built: dict[str, list[int]] = {}
    for f in figures:
        rejected.update(f["rejected"])
        for name, counts in f["totals"].items():
            totals[name].add(PatternTotals(**counts))
        for name, more in f["built"].items():
            built[name] = added(built.get(name, []), more)
    sent = {name: t.sent for name, t in totals.items()}
    metrics: dict[str, Any] = {
        "engine": "spark", "spark_plan": "range-local",
        "rows_read": sum(f["read"] for f in figures), "rows_rejected": dict(rejected),
        "rows_to_matchers": sum(sent.values()), "rows_to_matchers_by_pattern": sent,
        "rows_shuffled": 0, "matches": {n: t.matches for n, t in totals.items()},
        "kleene_cap_hits": {n: t.cap_hits for n, t in totals.items()},
        "negation_held_back": {n: t.held_back for n, t in totals.items()},
        "chunk_splits": {n: t.splits for n, t in totals.items()}}
    covered = [f["covered"] for f in figures if f.get("covered")]
    metrics["input_span"] = ([min(c[0] for c in covered), max(c[1] for c in covered)]
                             if covered else None)
    seconds: Counter = Counter()
    for f in figures:
        seconds.update(f.get("seconds", {}))
    metrics["task_seconds"] = {k: round(v, 3) for k, v in sorted(seconds.items())}
    firsts = [f["first"] for f in figures if f["first"] is not None]
    lasts = [f["last"] for f in figures if f["last"] is not None]
    span = (max(lasts) - min(firsts)) if firsts else 0.0
    job = job_from_json(dict(data))
    sharing = used_sharing(job)
    if sharing is not None:
        partials: Counter = Counter()
        for f in figures:
            partials.update({int(node): count for node, count in f["partials"].items()})
        metrics["shared_nodes"] = node_summaries(sharing, dict(partials), span)
    if built:
        metrics["partial_matches"] = partial_metrics(job, built, span)
    return metrics


class RangeTask:
    """The `mapPartitions` function: matches the ranges whose numbers arrive, writes their part
    files, and yields each range's figures as one JSON text."""

    def __init__(self, found: list[Region], data: dict[str, Any], staging: str,
                 output_format: str):
        self.regions = found
        self.data = data
        self.staging = staging
        self.output_format = output_format

    def __call__(self, numbers: Iterator[int]) -> Iterator[str]:
        from cepplan.engine_adapter.runtime.job import job_from_json
        from cepplan.engine_adapter.runtime.shared_nodes import used_sharing

        job = job_from_json(self.data)
        sharing = used_sharing(job)  # the shared plan, worked out once per task
        for number in numbers:
            yield json.dumps(self._run(self.regions[number], job, sharing), default=int)

    def _run(self, region: Region, job, sharing) -> dict[str, Any]:
        from cepplan.engine_adapter.local.range_match import (
            EMPTY_POOL_COLUMNS,
            match_range,
            window_margin,
        )
        from cepplan.engine_adapter.local.totals import PatternTotals
        from cepplan.engine_adapter.local.writer import MatchWriter
        from cepplan.engine_adapter.runtime.table import Columns

        clock, cpu = time.perf_counter(), time.process_time()
        reader = _Reader(region, self.data, job)
        own, read, rejected = reader.rows(region.start, region.end, region.before)
        figures: dict[str, Any] = {"number": region.number, "read": read,
                                   "rejected": dict(rejected),
                                   "rows_ok": read == region.rows, "ordered": True,
                                   "totals": {}, "built": {}, "partials": {},
                                   "first": None, "last": None, "seconds": {}}
        stamps = own[EVENT_TS]
        figures["ordered"] = _ordered(stamps)
        if not (figures["rows_ok"] and figures["ordered"]):
            return figures
        margin = window_margin(job)
        ahead, high = reader.ahead(stamps[-1] if len(stamps) else -math.inf, margin)
        low = -math.inf if region.number == 0 else (stamps[0] if len(stamps) else high)
        back = reader.back(low, margin) if low > -math.inf and low < high else None
        if ahead is None or (back is None and low > -math.inf and low < high):
            figures["ordered"] = False
            return figures
        if len(stamps):
            figures["first"], figures["last"] = float(stamps[0]), float(stamps[-1])
        totals = {p.name: PatternTotals() for p in job.patterns}
        if reader.own_covered.first <= reader.own_covered.last:
            figures["covered"] = list(reader.own_covered.span)
        built: dict[str, list[int]] = {}
        partials: dict[int, int] = {}
        seconds: dict[str, float] = {}
        writer = MatchWriter(Path(self.staging), self.output_format, job,
                             part=f"part-{region.number:05d}")
        try:
            if low < high:
                pool = Columns.concat([p for p in (back, own, ahead)
                                       if p is not None and len(p)], EMPTY_POOL_COLUMNS)
                # the input's time as far as this task read it, margins included: all of
                # it that its matches' negations need, or up to the input's very end
                match_range(pool, replace(job, span=reader.covered.span), (low, high), writer,
                             totals, built, seconds, sharing, partials)
            writer.close()
        finally:
            writer.close(complete=False)
        seconds["read and tag"] = reader.seconds
        seconds["task"] = time.perf_counter() - clock
        seconds["task CPU"] = time.process_time() - cpu  # the worker's: robust to load
        figures.update(totals={name: asdict(t) for name, t in totals.items()}, built=built,
                       partials=partials, seconds=seconds)
        return figures


def _ordered(stamps: np.ndarray) -> bool:
    return bool(len(stamps) < 2 or np.all(stamps[1:] >= stamps[:-1]))


class _Reader:
    """Reads and tags lines of the region's file with the in-process engine's reader and
    tagging; row ids are positions over the file."""

    def __init__(self, region: Region, data: Mapping[str, Any], job):
        from cepplan.engine_adapter.local.range_match import wanted_columns

        self.region = region
        self.reader = data["reader"]
        self.positions = not self.reader["source"].get("id_column")
        self.job = job
        self.wanted = wanted_columns(job)
        self.bound = {t.type for p in job.patterns for t in p.operands}
        self.seconds = 0.0  # reading and tagging, margins included
        self.covered = Covered()  # the good rows' time, margins included
        self.own_covered = Covered()  # the good rows' time in the region itself

    def rows(self, start: int, end: int, before: int):
        """(the tagged rows of the lines in [start, end), rows read, rejected by reason); the
        first line is row `before` of the file."""
        from cepplan.engine_adapter.local.range_match import EMPTY_POOL_COLUMNS, tagged_rows
        from cepplan.engine_adapter.runtime.table import Columns

        clock = time.perf_counter()
        with open(self.region.path, "rb") as handle:
            handle.seek(start)
            text = handle.read(end - start)
        parts, read, rejected = [], 0, Counter()
        own = (start, end) == (self.region.start, self.region.end)
        for got in read_lines(self.region.path, self.region.names, self.reader, self.bound,
                              text):
            read += got.read
            rejected.update(got.rejected)
            self.covered.add(*got.covered)
            if own:
                self.own_covered.add(*got.covered)
            frame = got.columns()
            if self.positions:
                frame.data[EVENT_ID] = frame.data[EVENT_ID] + before
            parts.append(tagged_rows(frame, self.job, self.wanted))
        self.seconds += time.perf_counter() - clock
        return Columns.concat(parts, EMPTY_POOL_COLUMNS), read, rejected

    def ahead(self, latest: float, margin: float):
        """(the tagged rows after the region up to a margin past the next range's first
        time, that time or +inf); (None, +inf) when they are out of time order."""
        region, size = self.region, FIRST_MARGIN_BYTES
        if region.last:
            return self.rows(region.end, region.end, 0)[0], math.inf
        with open(region.path, "rb") as handle:
            while True:
                end = min(region.size, line_start(handle, region.end + size))
                rows = self.rows(region.end, end, region.before + region.rows)[0]
                stamps = rows[EVENT_TS]
                if not _ordered(stamps) or (len(stamps) and stamps[0] < latest):
                    return None, math.inf
                if end >= region.size:
                    return rows, (stamps[0] if len(stamps) else math.inf)
                if len(stamps) and stamps[-1] > stamps[0] + margin:
                    return rows, stamps[0]
                size *= 2

    def back(self, low: float, margin: float):
        """The tagged rows before the region from a margin before `low` on; None when they
        are out of time order."""
        region, size = self.region, FIRST_MARGIN_BYTES
        with open(region.path, "rb") as handle:
            while True:
                start = max(region.data_start, line_start(handle, region.start - size))
                rows, read, _ = self.rows(start, region.start, 0)
                if self.positions:  # the region's first row is row `before`
                    rows.data[EVENT_ID] = rows.data[EVENT_ID] + (region.before - read)
                stamps = rows[EVENT_TS]
                if not _ordered(stamps) or (len(stamps) and stamps[-1] > low):
                    return None
                if start <= region.data_start or (len(stamps) and stamps[0] < low - margin):
                    return rows
                size *= 2
