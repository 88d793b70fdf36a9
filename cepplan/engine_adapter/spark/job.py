"""The generated evaluation job: one pass over the events for the whole workload.

Shipped in the job's runtime zip and started by the generated `job.py` under `spark-submit`;
imports only pyspark, the runtime and the standalone modules shipped beside it (DESIGN.md,
"The engine", "The generated Spark job"). One local CSV file in time order is matched by the
range-local plan (`spark.ranges`: the in-process engine's stages per byte range, no
shuffle); otherwise, or when the file turns out unordered, the shuffle plan's stages:

1. read through the workload's `source` and tag every event with the (pattern, variable)
   pairs it can bind: CSV in the Python workers with the in-process engine's reader and
   tagging (`spark.read`), else Spark's reader and one native expression (`spark.tags`); rows
   read and rejected by reason are counted in the same pass; the tagged events are cached
   (one aggregate over them is the only forced computation before the write);
2. acquire (seed 002 §3.3, `spark.acquire`): a pre-filter of later-step tags before the
   shuffle, the exact semi-joins in the match groups;
3. match: one shuffle per partition scheme, the recomputation matcher (seed 001) per group
   (`spark.match`); matches of patterns others read become events for the level above;
4. write the matches from the executors (JSON lines or Parquet part files under `matches/`,
   by Spark's writers or, on a local master, by the match groups themselves) and
   `metrics.json`, in a directory renamed over `--out` only when
   everything succeeded.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import SparkConf, SparkContext, StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from cepplan.engine_adapter.runtime.after_match import apply_skips
from cepplan.engine_adapter.runtime.job import job_from_json, needed_attributes, zoned_times
from cepplan.engine_adapter.runtime.match_rows import PatternColumns, match_layouts, text_rows
from cepplan.engine_adapter.runtime.parquet_parts import complete_parts
from cepplan.engine_adapter.runtime.positions import counted_keys, position_column
from cepplan.engine_adapter.runtime.records import MATCH_COLUMN
from cepplan.engine_adapter.runtime.spec import SpecError
from cepplan.engine_adapter.runtime.timed_out_counts import with_timed_out
from cepplan.engine_adapter.runtime.timed_out_output import split_timed_out
from cepplan.engine_adapter.spark.acquire import prefilter
from cepplan.engine_adapter.spark.match import (
    PATTERN,
    Counts,
    Span,
    complex_rows,
    match,
    schemes,
)
from cepplan.engine_adapter.spark.positions import numbered
from cepplan.engine_adapter.spark.ranges import ranges_apply, regions, regions_ahead, run_ranges
from cepplan.engine_adapter.spark.read import ReadFigures, plain_csv_splits, read_and_tag
from cepplan.engine_adapter.spark.shared import note_span, shared_metrics
from cepplan.engine_adapter.spark.stages import Stages
from cepplan.engine_adapter.spark.tags import TAGS, Layout, layout, tag_column
from cepplan.errors import InputError
from cepplan.outputs import check_directory_output, event_inputs
from cepplan.terminal import echo
from cepplan.workload.columns import (
    EVENT_ID,
    EVENT_TS,
    EVENT_TYPE,
    EVENT_ZONE,
    merged_attribute_types,
)
from cepplan.workload.spark_source import (
    REJECT,
    SourceError,
    read_events,
    reject_reasons,
    valid_rows,
)

MATCHES_DIR = "matches"


class SessionOnDemand:
    """A started SparkContext whose SparkSession is made only when a stage needs Spark SQL:
    the session's start costs the driver's JVM about a second of CPU (measured on 2 cores,
    docs/engine.md), which the range-local plan, plain RDD work, does without."""

    def __init__(self, context: SparkContext, shuffle_partitions: int) -> None:
        self.sparkContext = context
        self._partitions = shuffle_partitions
        self._session: SparkSession | None = None

    def session(self) -> SparkSession:
        """The SparkSession on the context, made on the first call."""
        if self._session is None:
            self._session = SparkSession.builder.getOrCreate()
            self._session.conf.set("spark.sql.shuffle.partitions", str(self._partitions))
        return self._session

    def stop(self) -> None:
        self.sparkContext.stop()


def run_job(spark: SparkSession | SessionOnDemand, data: dict[str, Any], events: Sequence[str],
            out_dir: str, *, output_format: str = "jsonl", say: Callable[[str], None] = print,
            counted: Future | None = None) -> dict[str, Any]:
    """Evaluate every pattern of the job over `events`; write matches and `metrics.json` into
    `out_dir`, replacing it only when everything succeeded. Returns the metrics. `counted`:
    `spark.ranges.regions_ahead`'s count, if started. `SpecError` before anything runs when
    the matches cannot be written as Parquet (two columns of one name)."""
    layouts = match_layouts(job_from_json(data)) if output_format == "parquet" else None
    if ranges_apply(spark.sparkContext, data, events):
        metrics = _by_ranges(spark.sparkContext, data, events, out_dir, output_format, say,
                             counted, layouts)
        if metrics is not None:
            return metrics
    if isinstance(spark, SessionOnDemand):
        spark = spark.session()
    job = job_from_json(data)
    plan = layout(job, data)
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    counts = spark.sparkContext.accumulator({}, Counts())
    pool, cached, figures = _read_and_tag(spark, data, events, job, plan, counts)
    data = {**data, "input_span": list(figures.covered)}  # negations decided within it
    job = replace(job, span=figures.covered)
    metrics = _read_metrics(figures)
    seconds["read and tag"] = time.perf_counter() - clock
    say(f"read {metrics['rows_read']:,} rows ({sum(metrics['rows_rejected'].values()):,} "
        f"rejected), {figures.tagged:,} events tagged for the patterns")
    clock = time.perf_counter()
    span = Span(figures.first, figures.last, figures.tagged,
                spark.sparkContext.defaultParallelism)
    note_span(counts, pool, job)  # the shared plan's per-window scale (spark.shared)
    staging = _staging(out_dir)
    direct = _direct_directory(spark, data, staging)
    written = data  # what the matches are written with; the match stages may need more
    if layouts is not None and direct is None and zoned_times(data):
        data = _zones_in_texts(data)
        job = replace(job, types=data["types"], data=data)
    try:
        stages = Stages(spark, job, data, events)  # contexts, consumer queries (spark.stages)
        rows, plan = stages.derive(pool, plan)  # deriving patterns first, when contexts exist
        outputs = stages.outputs(_evaluate(spark, rows, job, plan, data, span, counts, stages,
                                           direct, output_format))
        _write(outputs, staging, out_dir, layouts, metrics, seconds, clock, written, counts,
               stages, direct)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        cached.unpersist()
    return metrics


def _by_ranges(context: SparkContext, data: dict[str, Any], events: Sequence[str],
               out_dir: str, output_format: str, say: Callable[[str], None],
               counted: Future | None, layouts: dict[str, PatternColumns] | None
               ) -> dict[str, Any] | None:
    """The range-local plan (`spark.ranges`): the metrics, or None (nothing written) when
    the input is not in time order after all or its lines not countable."""
    clock = time.perf_counter()
    parallelism = context.defaultParallelism
    guess, found = counted.result() if counted is not None else (None, None)
    if guess != parallelism:
        found = regions(data, events, parallelism)
    if found is None:
        say("line ends other than \\n or \\r\\n: matching after a shuffle")
        return None
    staging = _staging(out_dir)
    try:
        metrics = run_ranges(context, data, found, staging, output_format)
        if metrics is None:
            shutil.rmtree(staging, ignore_errors=True)
            say("the events are not in time order: matching them after a shuffle instead")
            return None
        if layouts is not None:  # patterns no range matched: their columns still
            complete_parts(Path(staging, MATCHES_DIR), layouts)
        metrics["plan"] = data.get("plan", {})
        metrics["seconds"] = {"read, tag and match by range": round(
            time.perf_counter() - clock, 3)}
        _publish(staging, out_dir, with_timed_out(metrics, data["patterns"]), data)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    say(f"read {metrics['rows_read']:,} rows ({sum(metrics['rows_rejected'].values()):,} "
        f"rejected), matched in {len(found)} time ranges without a shuffle")
    return metrics


def _staging(out_dir: str) -> str:
    """A fresh hidden directory beside `out_dir` to write the run's output into."""
    parent = os.path.dirname(os.path.abspath(out_dir)) or "."
    os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=".cepplan-run-", dir=parent)


def _read_and_tag(spark: SparkSession, data: dict[str, Any], events: Sequence[str], job,
                  plan: Layout, counts) -> tuple[DataFrame, DataFrame, ReadFigures]:
    """The good rows carrying at least one tag, narrowed to the columns the matchers read; the
    cached frame behind them; rows read, rejected by reason, and the tagged rows' count and
    time span. Read in Python workers with the in-process reader where it applies
    (`spark.read`), else with Spark's reader and the native tag expression."""
    primitive = [t for t in plan.tags if not job.is_complex(t.operand.type)]
    context = spark.sparkContext
    counting = counted_keys(job.patterns)  # count windows: every good row numbered first
    splits = None if counting else plain_csv_splits(data, events, context.defaultParallelism,
                                                    local=context.master.startswith("local"))
    if splits is not None:
        reader = data["reader"]
        keys = [k for k in reader["source"].get("key_columns", ())
                if k not in merged_attribute_types(reader["attributes"].values())]
        canonical = [EVENT_TYPE, EVENT_TS, EVENT_ID, *keys,
                     *merged_attribute_types(reader["attributes"].values()),
                     *([EVENT_ZONE] if zoned_times(data) else [])]
        return read_and_tag(spark, data, splits, job, plan, primitive,
                            _columns(job, canonical), counts)
    reader = data["reader"]
    raw = read_events(spark, list(events), **reader, zoned=zoned_times(data))
    reasons = reject_reasons(reader["source"], reader["attributes"])
    observed = Observation("read")
    good = F.when(F.col(REJECT).isNull(), F.col(EVENT_TS))
    raw = raw.observe(observed, F.count(F.lit(1)).alias("rows"),
                      F.min(good).alias("first"), F.max(good).alias("last"),
                      *[F.count_if(F.col(REJECT) == r).alias(f"reject {i}")
                        for i, r in enumerate(reasons)])
    rows = numbered(valid_rows(raw), counting)
    wanted = _columns(job, rows.columns) + [position_column(keys) for keys in counting]
    pool = rows.select(*wanted, tag_column(job, plan, primitive, rows.columns).alias(TAGS))
    pool = pool.filter(F.size(TAGS) > 0).persist()
    # materialises the cache: the one read of the input
    tagged, first, last = pool.agg(F.count(F.lit(1)), F.min(EVENT_TS), F.max(EVENT_TS)).first()
    values = observed.get
    rejected = {r: int(values[f"reject {i}"]) for i, r in enumerate(reasons)
                if values[f"reject {i}"]}
    covered = (math.inf, -math.inf) if values["first"] is None else (
        float(values["first"]), float(values["last"]))
    return pool, pool, ReadFigures(int(values["rows"]), rejected, tagged, first or 0.0,
                                   last or 0.0, covered)


def _zones_in_texts(data: dict[str, Any]) -> dict[str, Any]:
    """The job data for match stages whose texts Spark's writer makes Parquet rows of: each
    event's text also holds the zone offset its time was written with (`EVENT_ZONE`), which
    `match_rows.text_rows` writes the times back in (these texts are never written)."""
    return {**data, "types": {t: (*attrs, EVENT_ZONE) for t, attrs in data["types"].items()}}


def _columns(job, available: list[str]) -> list[str]:
    """The canonical columns and every attribute a matcher reads, as far as the frame has it."""
    needed = [EVENT_TYPE, EVENT_TS, EVENT_ID]
    for spec in job.patterns:
        for attr in [*needed_attributes(job, spec), *spec.partition_by]:
            if attr in available and attr not in needed:
                needed.append(attr)
    return needed


def _read_metrics(figures: ReadFigures) -> dict[str, Any]:
    """The metrics skeleton with rows read and rejected (reason -> count) filled in."""
    return {"engine": "spark", "spark_plan": "shuffle", "rows_read": figures.rows,
            "rows_rejected": figures.rejected, "rows_to_matchers": 0,
            "rows_to_matchers_by_pattern": {}, "rows_shuffled": 0, "matches": {},
            "kleene_cap_hits": {}, "negation_held_back": {},
            "input_span": list(figures.covered) if figures.covered[0] <= figures.covered[1]
            else None}


def _direct_directory(spark: SparkSession, data: dict[str, Any],
                      staging: str) -> str | None:
    """Where match groups write their matches themselves: on a local master (the tasks see
    the driver's files), when no context stage filters the matches afterwards; None
    otherwise (matches go through Spark's writer)."""
    if data.get("contexts") or not spark.sparkContext.master.startswith("local"):
        return None
    direct = os.path.join(staging, "direct")
    os.makedirs(direct)
    return direct


def _evaluate(spark: SparkSession, pool: DataFrame, job, plan: Layout, data: dict[str, Any],
              span: Span, counts, stages: Stages, direct: str | None,
              output_format: str) -> list[DataFrame]:
    """Every level's match frames; complex events flow to the level above."""
    consumed = {o.type for p in job.patterns for o in p.operands if job.is_complex(o.type)}
    emit_types = {a: k for p in data["patterns"] for a, k in p.get("emit_types", {}).items()}
    outputs: list[DataFrame] = []
    made: DataFrame | None = None
    for patterns in plan.levels:
        frame = pool
        if made is not None:
            upper = [t for t in plan.tags if job.is_complex(t.operand.type)]
            tagged = made.select("*", tag_column(job, plan, upper, made.columns).alias(TAGS))
            frame = pool.unionByName(tagged.filter(F.size(TAGS) > 0),
                                     allowMissingColumns=True)
        acquired = prefilter(stages.push_down(frame, patterns), plan, patterns, span.rows)
        results = [stages.held(match(acquired, plan, keys, group, data, span, emit_types,
                                     counts, direct, output_format), group)
                   for keys, group in schemes(patterns).items()]
        level = results[0]
        for other in results[1:]:
            level = level.unionByName(other)
        if consumed & {p.name for p in patterns}:
            level = level.localCheckpoint()  # computed once for the writer and the level above
            new = complex_rows(level, consumed, emit_types)
            made = new if made is None else made.unionByName(new)
        outputs.append(level)
    return outputs


def _write(outputs: list[DataFrame], staging: str, out_dir: str,
           layouts: dict[str, PatternColumns] | None, metrics: dict, seconds: dict,
           clock: float, data: dict[str, Any], counts, stages: Stages,
           direct: str | None) -> None:
    """Write matches (from the executors) and metrics into the fresh `staging` directory,
    then swap it into place. `layouts`: each pattern's Parquet layout (None: JSON lines)."""
    union = outputs[0]
    for frame in outputs[1:]:
        union = union.unionByName(frame)
    target = os.path.join(staging, MATCHES_DIR)
    if layouts is not None:
        _write_parquet(union, target, layouts, data, direct)
    else:
        union.select(MATCH_COLUMN).write.text(target)
        _name_json_lines(target)
        if direct is not None:  # the parts the match groups wrote
            for name in os.listdir(direct):
                os.replace(os.path.join(direct, name), os.path.join(target, name))
            os.rmdir(direct)
    seconds["match and write"] = time.perf_counter() - clock
    _counted(metrics, counts.value, data)
    metrics.update(shared_metrics(counts.value, data))  # shared_nodes (spark.shared)
    metrics["plan"] = data.get("plan", {})
    metrics["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
    stages.finish(metrics, staging)
    _publish(staging, out_dir, with_timed_out(metrics, data["patterns"]), data)


def _write_parquet(union: DataFrame, target: str, layouts: dict[str, PatternColumns],
                   data: dict[str, Any], direct: str | None) -> None:
    """Each pattern's matches as Parquet under `target/pattern=NAME/`: written by the match
    groups themselves (`direct`; the stage is run for them by a write that keeps nothing),
    else made from the match texts by Spark's writer, one write per pattern over the
    stage's rows kept on the executors' disks (computed once)."""
    if direct is not None:
        union.write.format("noop").mode("overwrite").save()
        os.replace(direct, target)
    else:
        rows = union.select(PATTERN, MATCH_COLUMN).persist(StorageLevel.DISK_ONLY)
        try:
            for name, layout in layouts.items():
                rows.filter(F.col(PATTERN) == name).select(MATCH_COLUMN).mapInArrow(
                    TextRows(data, name), from_arrow_schema(layout.schema)).write.parquet(
                    os.path.join(target, f"pattern={name}"))
        finally:
            rows.unpersist()
    complete_parts(Path(target), layouts)


class TextRows:
    """The `mapInArrow` function making one pattern's match texts (format doc, "matches")
    into the rows of its Parquet layout (`match_rows.text_rows`)."""

    def __init__(self, data: dict[str, Any], name: str):
        self.data = data
        self.name = name

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        layout = match_layouts(job_from_json(self.data))[self.name]
        for batch in batches:
            yield from text_rows(layout, batch.column(0).to_pylist())


def _publish(staging: str, out_dir: str, metrics: dict[str, Any],
             data: Mapping[str, Any]) -> None:
    """The timed-out partial matches moved beside the matches, the after-match skips
    applied and metrics.json written in `staging`, then `staging` renamed over `out_dir`."""
    split_timed_out(Path(staging), data)
    apply_skips(Path(staging), data, metrics)
    with open(os.path.join(staging, "metrics.json"), "w", encoding="utf-8") as handle:
        json.dump(metrics, handle, indent=2)
    if os.path.isdir(out_dir):
        old = staging + ".old"
        os.replace(out_dir, old)
        os.replace(staging, out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out_dir)


def _name_json_lines(directory: str) -> None:
    """Spark's text writer names parts `.txt`; they hold JSON lines, so say so."""
    for name in os.listdir(directory):
        if name.startswith("part-") and name.endswith(".txt"):
            os.replace(os.path.join(directory, name),
                       os.path.join(directory, name[:-4] + ".jsonl"))


def _counted(metrics: dict, counts: dict, data: dict[str, Any]) -> None:
    """Fill the per-pattern counts from the match stage's accumulator."""
    names = [p["name"] for p in data["patterns"]]
    for name in names:
        metrics["rows_to_matchers_by_pattern"][name] = counts.get(("sent", name), 0)
        metrics["matches"][name] = counts.get(("matches", name), 0)
        metrics["kleene_cap_hits"][name] = counts.get(("cap", name), 0)
        metrics["negation_held_back"][name] = counts.get(("held", name), 0)
    metrics["rows_to_matchers"] = sum(metrics["rows_to_matchers_by_pattern"].values())
    metrics["rows_shuffled"] = counts.get(("shuffled", ""), 0)


def shuffle_partitions(paths: Sequence[str], parallelism: int) -> int:
    """Shuffle partitions from the input size: about one per 32 MiB of local input, at least
    twice the parallelism (adaptive execution coalesces small ones)."""
    size = sum(os.path.getsize(p) for p in paths if os.path.isfile(p))
    return max(2 * parallelism, min(2000, math.ceil(size / (32 << 20))))


def main(argv: Sequence[str] | None = None) -> int:
    """`spark-submit job.py --job job.json --events PATH... --out DIR [--format parquet]`."""
    parser = argparse.ArgumentParser(prog="job.py")
    parser.add_argument("--job", required=True, help="the job data (job.json)")
    parser.add_argument("--events", required=True, nargs="+", help="event files")
    parser.add_argument("--out", required=True, help="output directory (replaced on success)")
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    parser.add_argument("--verbose", action="store_true", help="keep Spark's own log")
    args = parser.parse_args(argv)
    try:  # before Spark starts: never a folder of the user's, nor one holding the events
        out = check_directory_output(Path(args.out), "run", event_inputs(args.events))
    except InputError as err:
        echo(f"error: {err}", err=True)
        return 2
    with open(args.job, encoding="utf-8") as handle:
        data = json.load(handle)
    counted = regions_ahead(data, args.events)  # while the JVM starts
    context = SparkContext.getOrCreate(SparkConf()
                                       .setAppName(f"cepplan {data['workload'].get('name', '')}")
                                       .set("spark.sql.session.timeZone", "UTC"))
    if not args.verbose:
        context.setLogLevel("ERROR")
    spark = SessionOnDemand(context, shuffle_partitions(args.events,
                                                        context.defaultParallelism))
    try:
        metrics = run_job(spark, data, args.events, str(out.real), output_format=args.format,
                          counted=counted,
                          say=lambda text: echo(f"cepplan: {text}", err=True))
    except (SourceError, SpecError) as err:
        echo(f"error: {err}", err=True)
        return 2
    finally:
        spark.stop()
    print(json.dumps({"matches": metrics["matches"]}))
    return 0
