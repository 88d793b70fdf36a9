"""The match stage: one shuffle per partition scheme, every pattern of the scheme per group.

Shipped in the job's runtime zip. Patterns that partition by the same key attributes form a
scheme. Its acquired events are grouped by a hash of the key (so many keys share a group) and
by time ranges that overlap by the largest window of the scheme (and by it again ahead, when
a pattern has a negation that can look ahead). A range owns the matches whose latest event
falls in it, so each match is reported once. In a group, each pattern's matcher (seed 001,
`evaluate_partition`) runs per key on the events kept for it. Counts travel back in one
accumulator: no extra pass over the data.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import AccumulatorParam
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cepplan.engine_adapter.runtime.job import (
    PartitionOutput,
    evaluate_partition,
    job_from_json,
    partitions,
    zoned_times,
)
from cepplan.engine_adapter.runtime.match_rows import match_layouts
from cepplan.engine_adapter.runtime.parquet_parts import ParquetParts
from cepplan.engine_adapter.runtime.records import MATCH_COLUMN, lines_data
from cepplan.engine_adapter.runtime.spec import NEGATED, PatternSpec
from cepplan.engine_adapter.spark.acquire import INNER, acquire_group, group_acquisition
from cepplan.engine_adapter.spark.read import ARROW_TYPES
from cepplan.engine_adapter.spark.shared import evaluate_shared
from cepplan.engine_adapter.spark.tags import TAGS, Layout, any_of
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, EVENT_ZONE
from cepplan.workload.spark_source import spark_type

PATTERN = "pattern"
_RANGE, _PART = "__range", "__part"
GROUP_EVENTS = 50_000  # events per range and key group the matcher holds at once (at most)


class Counts(AccumulatorParam):
    """Adds dictionaries of counts: ("matches"|"sent"|"cap"|"held", pattern) and ("shuffled",
    ""); ("first", "") and ("last", "") keep the smallest / largest timestamp (a task run
    twice changes neither)."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, value1: dict, value2: dict) -> dict:
        for key, count in value2.items():
            if key[0] in _EXTREMES and key in value1:
                value1[key] = _EXTREMES[key[0]](value1[key], count)
            else:
                value1[key] = value1.get(key, 0) + count
        return value1


_EXTREMES = {"first": min, "last": max}


@dataclass(frozen=True)
class Span:
    """The good events' time span and count (from the read stage) and the job's parallelism."""

    start: float
    end: float
    rows: int
    parallelism: int


def schemes(patterns: tuple[PatternSpec, ...]) -> dict[tuple[str, ...], list[PatternSpec]]:
    """Patterns grouped by their key attributes (sorted), in workload order."""
    found: dict[tuple[str, ...], list[PatternSpec]] = {}
    for spec in patterns:
        found.setdefault(tuple(sorted(spec.partition_by)), []).append(spec)
    return found


def output_schema(emit_types: Mapping[str, str], zoned: bool = False) -> T.StructType:
    """Columns of a match stage's output: pattern, match text, time, id, emitted attributes
    (and, `zoned`, the zone offset its time was written with: its last event's)."""
    return T.StructType([T.StructField(PATTERN, T.StringType(), False),
                         T.StructField(MATCH_COLUMN, T.StringType(), True),
                         T.StructField(EVENT_TS, T.DoubleType(), True),
                         T.StructField(EVENT_ID, T.LongType(), True),
                         *[T.StructField(a, spark_type(k), True) for a, k in emit_types.items()],
                         *([T.StructField(EVENT_ZONE, T.IntegerType(), True)] if zoned else [])])


def match(acquired: DataFrame, plan: Layout, keys: tuple[str, ...],
          patterns: list[PatternSpec], data: Mapping[str, Any], span: Span,
          emit_types: Mapping[str, str], counts, direct: str | None = None,
          output_format: str = "jsonl") -> DataFrame:
    """All matches of `patterns` (one scheme) over their acquired events. With `direct` (a
    directory the tasks can write), the match groups write the matches there themselves
    instead of returning them: as JSON lines those of patterns nobody reads, as Parquet
    all (`_Output`)."""
    flags = {p.name: f"__in_{i}" for i, p in enumerate(patterns)}
    how = group_acquisition(plan, patterns)  # acquisition semi-joins run in the groups
    # the rows' flags are read off their tags in the groups (`tag_flags`): one column per
    # pattern or tag tested here would make one generated Java method of the whole stage,
    # beyond the JVM's 64 KB for some 60 patterns
    owners = {flags[p.name]: [t.index for t in plan.of(p)] for p in patterns}
    rows = acquired.filter(any_of([t for p in patterns for t in plan.of(p)]))
    back = max((p.window or 0.0) for p in patterns)
    ahead = max(((p.window or 0.0) for p in patterns if any(o.kind == NEGATED
                                                            for o in p.operands)), default=0.0)
    slices = max(4 * span.parallelism, math.ceil(span.rows / GROUP_EVENTS)) if not keys else \
        max(1, math.ceil(span.rows / (GROUP_EVENTS * 4 * span.parallelism)))
    width = max(4 * (back + how.margin), (span.end - span.start) / slices, 1e-9)
    if any(p.window_events for p in patterns):  # positions: one time range per key group
        width = span.end - span.start + 1.0
    start = span.start

    def first(margin: float) -> Column:
        return F.floor((F.col(EVENT_TS) - ahead - margin - start) / width).cast("long")

    def last(margin: float) -> Column:
        return F.floor((F.col(EVENT_TS) + back + margin - start) / width).cast("long")
    part = (F.pmod(F.xxhash64(*[F.col(k) for k in keys]), F.lit(4 * span.parallelism))
            if keys else F.lit(0).cast("long"))
    ranged = rows.select("*", F.explode(F.sequence(first(how.margin), last(how.margin)))
                         .alias(_RANGE), part.alias(_PART))
    ranged = ranged.withColumn(INNER, F.col(_RANGE).between(first(0.0), last(0.0)))
    schema = output_schema(emit_types, zoned_times(data))
    names = [p.name for p in patterns]
    cache: dict[str, Any] = {}

    def evaluate(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if "job" not in cache:
            cache["job"] = job_from_json(data)
            cache["out"] = _Output(schema, cache["job"], direct, output_format)
        job, output = cache["job"], cache["out"]
        table = pa.Table.from_batches(list(batches))
        found_flags = {**tag_flags(table, owners),
                       **tag_flags(table, {c: [n] for c, n in how.indices.items()})}
        for column, flag in found_flags.items():
            table = table.append_column(column, pa.array(flag))
        group = table.drop_columns([TAGS]).to_pandas()
        acquire_group(group, {n: job.pattern(n) for n in names}, how, flags)
        index = int(group[_RANGE].iloc[0])
        own = (start + index * width, start + (index + 1) * width)
        stamps = group[EVENT_TS].to_numpy()
        owned = (stamps >= own[0]) & (stamps < own[1])
        found: dict[tuple[str, str], int] = {("shuffled", ""): len(group)}

        where = f"{int(group[_PART].iloc[0])}-{index}"  # the group's part files
        shared, batches = evaluate_shared(cache, job, group, flags, own, found, output, where)
        yield from batches  # the sharing groups'

        for name in names:
            spec = job.pattern(name)
            mine = group[flags[name]].to_numpy(dtype=bool)
            found[("sent", name)] = int(np.count_nonzero(mine & owned))
            if name in shared:
                continue
            matches = cap = held = 0
            for events in partitions(group[mine], spec.partition_by):
                out = evaluate_partition(events, job, spec, own=own,
                                         with_complex=name in output.consumed)
                cap += out.cap_hits
                held += out.held_back
                matches += out.count
                yield from output.write(name, out, where)
            found[("matches", name)] = matches
            found[("cap", name)] = cap
            found[("held", name)] = held
        output.close()
        counts.add(found)

    return ranged.groupBy(_PART, _RANGE).applyInArrow(evaluate, schema)


def tag_flags(table: pa.Table, owners: Mapping[str, list[int]]) -> dict[str, np.ndarray]:
    """Per column of `owners` (column -> tag numbers, each number in one column at most),
    whether each row's tags include one of its numbers; the rows' tags read once, in
    NumPy."""
    if not owners:
        return {}
    tags = table.column(TAGS).combine_chunks()
    numbers = pc.list_flatten(tags).to_numpy(zero_copy_only=False).astype(np.int64)
    rows = pc.list_parent_indices(tags).to_numpy(zero_copy_only=False)
    owned = max((n for found in owners.values() for n in found), default=0)
    top = max(int(numbers.max()) if len(numbers) else 0, owned) + 1
    owner = np.full(top, -1, dtype=np.int64)
    for position, found in enumerate(owners.values()):
        owner[found] = position
    column = owner[numbers]
    hit = column >= 0
    flags = np.zeros((len(owners), table.num_rows), dtype=bool)
    flags[column[hit], rows[hit]] = True
    return dict(zip(owners, flags, strict=True))


class _Output:
    """A match group's output as Arrow batches of the stage's schema: complex events (for
    patterns others read), else only the pattern and the match text, rendered once (no
    per-match Python object), one batch per rendered chunk. With a `direct` directory the
    group writes the matches there itself (nothing goes back to the JVM but complex
    events): JSON lines from Arrow's buffers, one file per group and pattern; Parquet as
    `pattern=NAME/part-GROUP.parquet` (`ParquetParts`), complex events' matches included.
    A retried group rewrites its files."""

    def __init__(self, schema: T.StructType, job, direct: str | None, output_format: str):
        self.schema = pa.schema([pa.field(f.name, ARROW_TYPES[type(f.dataType)])
                                 for f in schema])
        self.consumed = {o.type for p in job.patterns for o in p.operands
                         if job.is_complex(o.type)}
        self.direct = direct
        self.layouts = (match_layouts(job) if direct is not None and output_format == "parquet"
                        else None)
        self.parts: ParquetParts | None = None  # the group's Parquet files
        self.started: set[str] = set()  # the group's JSON lines files written so far
        self.number = {p.name: i for i, p in enumerate(job.patterns)}  # unique across schemes

    def write(self, name: str, out: PartitionOutput, where: str) -> Iterator[pa.RecordBatch]:
        """Pattern `name`'s output of one partition of group `where`."""
        if out.complex is not None and len(out.complex):
            yield self.events(out.complex.assign(**{PATTERN: name}))
            if self.layouts is None:  # the stage's writer writes them
                return
        if not out.count:
            return
        if self.layouts is not None:
            if self.parts is None:
                self.parts = ParquetParts(Path(self.direct), f"part-{where}", self.layouts)
            self.parts.write(name, out)
        elif self.direct is not None:
            self._lines(out.matches, f"{self.number[name]}-{where}")
        else:
            yield from self._texts(name, out.matches)

    def events(self, frame: pd.DataFrame) -> pa.RecordBatch:
        columns = frame.reindex(columns=self.schema.names)
        return pa.RecordBatch.from_pandas(columns, schema=self.schema, preserve_index=False)

    def _lines(self, lines: pa.ChunkedArray, part: str) -> None:
        mode = "ab" if part in self.started else "wb"
        self.started.add(part)
        with open(os.path.join(self.direct, f"part-{part}.jsonl"), mode) as handle:
            for data in lines_data(lines):
                handle.write(data)

    def _texts(self, name: str, lines: pa.ChunkedArray) -> Iterator[pa.RecordBatch]:
        for chunk in lines.chunks:  # JSON lines: each value ends in a newline, the writer's
            n = len(chunk)
            text = pc.utf8_slice_codeunits(chunk, 0, -1).cast(pa.string())
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.full(n, name, dtype=object), pa.string()), text,
                 *[pa.nulls(n, f.type) for f in self.schema][2:]], schema=self.schema)

    def close(self) -> None:
        """The group is done: its files are complete; the next one starts its own."""
        self.started.clear()
        if self.parts is not None:
            self.parts.close()
            self.parts = None


def complex_rows(results: DataFrame, consumed: set[str],
                 emit_types: Mapping[str, str]) -> DataFrame:
    """Matches of patterns that others read, as events of the pattern's type."""
    zone = [EVENT_ZONE] if EVENT_ZONE in results.columns else []
    return results.filter(F.col(PATTERN).isin(sorted(consumed))).select(
        F.col(PATTERN).alias(EVENT_TYPE), EVENT_TS, EVENT_ID, *emit_types, *zone, MATCH_COLUMN)
