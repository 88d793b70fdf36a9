"""Read and tag CSV input in Spark's Python workers with the in-process engine's own code.

Shipped in the job's runtime zip. Each task parses one byte range of a file with pyarrow
(`local/source.py`: the same casts, bad-row reasons and row ids as `--engine local`) and tags
the rows with `runtime/tagging.tag_masks` (the local engine's tagging); only rows some
variable can bind reach the JVM, already typed and tagged. Spark's CSV reader and the
native tag expression did the same work several times slower (docs/benchmarks.md, `engine_spark`).

Used on a local master when the in-process reader can read the input (CSV; local files; a
`time_format` it translates; its modules importable, orjson among them) and the plan has no
contexts or consumer queries (they read the input again with Spark's reader and must see the
same row ids); `plain_csv_splits` says None otherwise and the job reads with `spark_source`.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cepplan.engine_adapter.local.readable import plain_csv
from cepplan.engine_adapter.spark.tags import TAGS, Layout, Tag
from cepplan.sources.csv_ranges import header_columns
from cepplan.workload.columns import (
    EVENT_ID,
    EVENT_TS,
    EVENT_TYPE,
    EVENT_ZONE,
    merged_attribute_types,
)
from cepplan.workload.input_files import content_problem
from cepplan.workload.spark_source import SourceError, check_column_names, spark_type

SPLIT_BYTES = 32 << 20  # at most this much of a file per task
MIN_SPLIT_BYTES = 1 << 20  # and at least this much (unless the file is smaller)
_SPLIT = "__split"
ARROW_TYPES = {T.StringType: pa.string(), T.DoubleType: pa.float64(), T.LongType: pa.int64(),
               T.BooleanType: pa.bool_(), T.IntegerType: pa.int32()}  # Spark type -> Arrow


@dataclass(frozen=True)
class Split:
    """One task's byte range of one file: the lines that start in [start, end)."""

    path: str
    start: int
    end: int
    names: tuple[str, ...]  # the file's columns
    header: bool  # the range begins with the file's header line


@dataclass(frozen=True)
class ReadFigures:
    """What the read stage observed: rows read, rejected by reason, the tagged rows' count
    and time span, and the time the input covers (its good rows' first and last timestamp,
    `Job.span`)."""

    rows: int
    rejected: dict[str, int]
    tagged: int
    first: float
    last: float
    covered: tuple[float, float] = (math.inf, -math.inf)


def plain_csv_splits(data: Mapping[str, Any], events: Sequence[str], parallelism: int, *,
                     local: bool = True) -> list[Split] | None:
    """The byte ranges to read, or None when this reader does not apply (see module doc;
    `local`: the master is local, so the tasks see the driver's files and Python)."""
    if not local or not plain_csv(data, events):
        return None
    source = data["reader"]["source"]
    reader = data["reader"]
    header = bool(source.get("header", True))
    total = sum(os.path.getsize(p) for p in events)
    step = max(MIN_SPLIT_BYTES, min(SPLIT_BYTES, math.ceil(total / (2 * parallelism))))
    splits = []
    for path in events:
        problem = content_problem(path, "csv")
        if problem:
            raise SourceError(problem, path)
        names = tuple(_header(path)) if header else tuple(source.get("columns") or ())
        if not names:
            raise SourceError("cannot find column names: the CSV input is empty or has no "
                              "header line")
        check_column_names(names, source, reader["attributes"], [path])
        size = os.path.getsize(path)
        count = max(1, math.ceil(size / step))
        bounds = [size * i // count for i in range(count + 1)]
        splits += [Split(path, a, b, names, header and a == 0)
                   for a, b in itertools.pairwise(bounds)]
    return splits


def _header(path: str) -> list[str]:
    """The column names on the file's first non-blank line (`csv_ranges.header_columns`)."""
    from cepplan.sources.text_input import LineTooLong

    try:
        return header_columns(path)
    except LineTooLong as err:
        raise SourceError(str(err), path) from None


def read_and_tag(spark: SparkSession, data: Mapping[str, Any], splits: list[Split], job,
                 plan: Layout, primitive: list[Tag], wanted: list[str],
                 counts) -> tuple[DataFrame, DataFrame, ReadFigures]:
    """(the tagged rows with the columns `wanted` and `__tags`, the cached frame to unpersist
    at the end, the read figures); one Spark job reads, tags and caches. `counts` is a
    `spark.match.Counts` accumulator that the tasks add their read figures to."""
    reader = data["reader"]
    has_ids = bool(reader["source"].get("id_column"))
    kinds = merged_attribute_types(reader["attributes"].values())
    fields = [T.StructField(EVENT_TYPE, T.StringType()), T.StructField(EVENT_TS, T.DoubleType()),
              T.StructField(EVENT_ID, T.LongType())]
    fields += [T.StructField(c, T.IntegerType() if c == EVENT_ZONE
                             else spark_type(kinds.get(c, "string")))
               for c in wanted if c not in (EVENT_TYPE, EVENT_TS, EVENT_ID)]
    fields += [T.StructField(TAGS, T.ArrayType(T.IntegerType())),
               T.StructField(_SPLIT, T.IntegerType())]
    schema = T.StructType(fields)
    task = _Task(splits, dict(data), primitive, schema, counts)
    cached = spark.range(0, len(splits), 1, len(splits)).mapInArrow(task, schema).persist()
    tagged, first, last = cached.agg(F.count(F.lit(1)), F.min(EVENT_TS),
                                     F.max(EVENT_TS)).first()
    found = counts.value
    rejected = {reason: n for (kind, reason), n in found.items() if kind == "reject" and n}
    figures = ReadFigures(found.get(("read", ""), 0), rejected, tagged, first or 0.0,
                          last or 0.0, (found.get(("first", ""), math.inf),
                                        found.get(("last", ""), -math.inf)))
    ids = F.col(EVENT_ID)
    if not has_ids:  # positions over all files: rows (malformed ones too) of earlier splits
        sizes = [found.get(("split", str(i)), 0) for i in range(len(splits))]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64).tolist()
        ids = F.element_at(F.array(*[F.lit(o).cast("long") for o in offsets]),
                           F.col(_SPLIT) + 1) + F.col(EVENT_ID)
    pool = cached.select(*[ids.alias(c) if c == EVENT_ID else F.col(c)
                           for c in [*wanted, TAGS]])
    return pool, cached, figures


def task_numbers(batches: Iterator[pa.RecordBatch]) -> Iterator[int]:
    """The split (or range) numbers a `mapInArrow` task receives, one per input row."""
    for batch in batches:
        yield from batch.column(0).to_pylist()


def read_lines(path: str, names: Sequence[str], reader: Mapping[str, Any],
               bound: set[str], text: bytes) -> Iterator[Any]:
    """The in-process reader's batches over `text`, whole lines of `path` without its
    header (columns `names`), only rows of the `bound` types; its errors as the job's."""
    from cepplan.engine_adapter.local.source import read_batches
    from cepplan.errors import InputError

    if not text:
        return
    source = {**reader["source"], "header": False, "columns": list(names)}
    try:
        yield from read_batches([path], source, reader["attributes"], reader["time_unit"],
                                only_types=bound, text=text)
    except InputError as err:  # what the in-process engine says, as the job's error
        raise SourceError(err.problems[0].message, path) from None


class _Task:
    """The `mapInArrow` function: reads the splits whose numbers arrive, yields tagged rows."""

    def __init__(self, splits: list[Split], data: dict[str, Any], primitive: list[Tag],
                 schema: T.StructType, counts):
        self.splits = splits
        self.data = data
        self.tags = [(t.pattern.name, t.var, t.index) for t in primitive]
        self.schema = schema
        self.counts = counts

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from cepplan.engine_adapter.runtime.job import job_from_json

        job = job_from_json(self.data)
        for number in task_numbers(batches):
            yield from self._read(number, job)

    def _read(self, number: int, job) -> Iterator[pa.RecordBatch]:
        split = self.splits[number]
        bound = {t.type for p in job.patterns for t in p.operands if not job.is_complex(t.type)}
        found: dict[tuple[str, str], int] = {}
        position = 0
        for got in read_lines(split.path, split.names, self.data["reader"], bound,
                              _lines(split)):
            position += got.read
            found[("read", "")] = found.get(("read", ""), 0) + got.read
            for reason, n in got.rejected.items():
                found[("reject", reason)] = found.get(("reject", reason), 0) + n
            found[("first", "")] = min(found.get(("first", ""), math.inf), got.covered[0])
            found[("last", "")] = max(found.get(("last", ""), -math.inf), got.covered[1])
            out = self._tagged(got.columns(), job, number)
            if out is not None:
                yield out
        found[("split", str(number))] = position
        self.counts.add(found)

    def _tagged(self, frame, job, number: int) -> pa.RecordBatch | None:
        """The rows of `frame` (the reader's NumPy `Columns`, no pandas) some variable can
        bind, typed as the schema says, with their tags (the local engine's `tag_masks`)."""
        from cepplan.engine_adapter.runtime.tagging import tag, tag_masks

        if not len(frame):
            return None
        masks = tag_masks(frame, job)
        matrix = np.column_stack([masks[tag(p, v)] for p, v, _ in self.tags])
        keep = matrix.any(axis=1)
        if not keep.any():
            return None
        chosen = matrix[keep]
        rows, columns = np.nonzero(chosen)
        offsets = np.zeros(len(chosen) + 1, dtype=np.int32)
        np.cumsum(np.bincount(rows, minlength=len(chosen)), out=offsets[1:])
        indices = np.array([i for _, _, i in self.tags], dtype=np.int32)[columns]
        arrays = []
        for field in self.schema:
            if field.name == TAGS:
                arrays.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(indices)))
            elif field.name == _SPLIT:
                arrays.append(pa.array(np.full(len(chosen), number, dtype=np.int32)))
            else:
                values = pa.Array.from_pandas(frame[field.name][keep])
                arrays.append(values.cast(ARROW_TYPES[type(field.dataType)]))
        return pa.RecordBatch.from_arrays(arrays, names=[f.name for f in self.schema])


def _lines(split: Split) -> bytes:
    """The bytes of the lines that start in the split's range (the header line dropped)."""
    with open(split.path, "rb") as handle:
        start = split.start
        if start > 0:  # a line starting before the range belongs to the split before
            handle.seek(start - 1)
            if handle.read(1) != b"\n":
                handle.readline()
            start = handle.tell()
        if split.header:
            handle.readline()
            start = handle.tell()
        if start >= split.end:
            return b""
        data = handle.read(split.end - start)
        if not data.endswith(b"\n"):
            data += handle.readline()  # the last line runs past the range's end
        return data
