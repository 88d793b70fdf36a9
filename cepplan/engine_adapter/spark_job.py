"""The generated evaluation job: events -> acquisition plan -> matchers -> matches + metrics.

Shipped in the job's runtime zip and started by the generated `job.py` under `spark-submit`;
imports only pyspark, the runtime and `cepplan.workload.spark_source` (DESIGN.md, "The
generated Spark job"). Per pattern, children first:

1. tag (push-down): each event gets the variables whose type and filters it satisfies;
2. acquire (seed 002 §3.3): step-1 variables' events are kept; an event of a later step is kept
   only when, for every positive variable of the earlier steps, a kept event of it (same key)
   lies within the window on the side the SEQ order allows — range semi-joins on time buckets
   of the window's width;
3. match: events grouped by key and by time ranges that overlap by the window (and by it again
   after, for negations that look ahead); each range owns the matches whose latest event falls
   in it; `applyInPandas` runs the recomputation matcher (seed 001) per group;
4. the matches become events of the pattern's type for the patterns above it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cepplan.engine_adapter.runtime.job import evaluate_partition, job_from_json
from cepplan.engine_adapter.runtime.records import MATCH_COLUMN
from cepplan.engine_adapter.runtime.tagging import TAGS, tag, tag_frame
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.spark_source import (
    REJECT,
    SourceError,
    read_events,
    spark_type,
    valid_rows,
)

RANGE = "__range"
_STATS = ("__cap", "__rows")


def run_job(spark: SparkSession, data: dict[str, Any], events: Sequence[str], out_dir: str, *,
            output_format: str = "jsonl", say: Callable[[str], None] = print) -> dict[str, Any]:
    """Evaluate every pattern of the job over `events`; write matches and `metrics.json` into
    `out_dir`, replacing it only when everything succeeded. Returns the metrics."""
    job = job_from_json(data)
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    raw = read_events(spark, list(events), **data["reader"]).persist()
    rows_read = raw.count()
    rejected = {r[REJECT]: r["count"] for r in
                raw.filter(F.col(REJECT).isNotNull()).groupBy(REJECT).count().collect()}
    good = valid_rows(raw)
    seconds["read"] = time.perf_counter() - clock
    say(f"read {rows_read} rows ({sum(rejected.values())} rejected)")
    pool = _tagged(good, data).persist()
    consumers = {o.type for p in job.patterns for o in p.operands}
    metrics: dict[str, Any] = {"rows_read": rows_read, "rows_rejected": rejected,
                               "rows_to_matchers": 0, "rows_to_matchers_by_pattern": {},
                               "rows_shuffled": 0, "matches": {}, "kleene_cap_hits": {},
                               "seconds": seconds}
    outputs = []
    for spec in job.patterns:
        pattern = next(p for p in data["patterns"] if p["name"] == spec.name)
        clock = time.perf_counter()
        kept = _acquire(pool, pattern, spec).localCheckpoint()
        sent = kept.count()
        seconds[f"acquire {spec.name}"] = time.perf_counter() - clock
        clock = time.perf_counter()
        result = _match(spark, kept, data, pattern).localCheckpoint()
        stats = result.filter(F.col(MATCH_COLUMN).isNull()).agg(
            F.sum("__cap").alias("cap"), F.sum("__rows").alias("rows")).first()
        found = result.filter(F.col(MATCH_COLUMN).isNotNull())
        count = found.count()
        seconds[f"match {spec.name}"] = time.perf_counter() - clock
        metrics["rows_to_matchers"] += sent
        metrics["rows_to_matchers_by_pattern"][spec.name] = sent
        metrics["rows_shuffled"] += int(stats["rows"] or 0)
        metrics["matches"][spec.name] = count
        metrics["kleene_cap_hits"][spec.name] = int(stats["cap"] or 0)
        say(f"pattern {spec.name}: {sent} rows to matchers, {count} matches")
        if metrics["kleene_cap_hits"][spec.name]:
            say(f"warning: pattern {spec.name}: {metrics['kleene_cap_hits'][spec.name]} Kleene "
                f"enumerations cut at kleene_cap={data['options'].get('kleene_cap', 16)}")
        outputs.append(found.select(MATCH_COLUMN))
        if spec.name in consumers:
            made = found.select(F.lit(spec.name).alias(EVENT_TYPE), EVENT_TS, EVENT_ID,
                                *pattern["emit"], MATCH_COLUMN)
            pool = pool.unionByName(_tagged(made, data),
                                    allowMissingColumns=True).localCheckpoint()
    clock = time.perf_counter()
    _write(outputs, out_dir, output_format, metrics, seconds, clock, data)
    return metrics


def _tagged(frame: DataFrame, data: dict[str, Any]) -> DataFrame:
    """The frame with the `__vars` tags of `tagging.tag_frame` (filters pushed down)."""
    schema = T.StructType([*frame.schema.fields,
                           T.StructField(TAGS, T.ArrayType(T.StringType()), False)])

    def tag_batches(batches):
        job = job_from_json(data)
        for batch in batches:
            yield tag_frame(batch, job)

    return frame.mapInPandas(tag_batches, schema).filter(F.size(TAGS) > 0)


def _acquire(pool: DataFrame, pattern: dict[str, Any], spec) -> DataFrame:
    """The pattern's events, acquired step by step as the plan says (seed 002 §3.3)."""
    name = spec.name
    window = spec.window
    keys = list(spec.partition_by)
    steps = [list(s) for s in pattern["steps"]] if spec.operator != "OR" else [
        [o.var for o in spec.operands]]
    if window is None:
        steps = [[v for s in steps for v in s]]
    kept: dict[str, DataFrame] = {}
    earlier: list[str] = []
    for step in steps:
        for var in step:
            frame = pool.filter(F.array_contains(TAGS, tag(name, var)))
            for other in earlier:
                frame = _within(frame, kept[other], keys, window,
                                spec.operand(other).position, spec.operand(var).position,
                                spec.operator == "SEQ")
            kept[var] = frame.localCheckpoint() if len(steps) > 1 else frame
        earlier += [v for v in step if spec.operand(v).kind != "negated"]
    union = None
    for frame in kept.values():
        union = frame if union is None else union.unionByName(frame)
    wanted = [c for c in union.columns if c != TAGS]
    return union.select(*wanted).dropDuplicates([EVENT_TYPE, EVENT_ID, EVENT_TS])


def _within(frame: DataFrame, anchors: DataFrame, keys: list[str], window: float,
            anchor_position: int, position: int, ordered: bool) -> DataFrame:
    """Rows of `frame` with an anchor (same key) within the window: a range semi-join done as
    an equi-join on time buckets of the window's width (an event's partners lie in its own
    bucket or a neighbouring one), then the exact range test."""
    width = window if window > 0 else 1.0
    partner = (anchors.select(*[F.col(k).alias(f"__k_{k}") for k in keys],
                              F.col(EVENT_TS).alias("__a_ts")).distinct()
               .withColumn("__bucket", F.explode(F.array(*[
                   F.floor(F.col("__a_ts") / width) + d for d in (-1, 0, 1)]))))
    low, high = F.col("__a_ts") - window, F.col("__a_ts") + window
    if ordered and anchor_position < position:
        low = F.col("__a_ts")
    elif ordered and anchor_position > position:
        high = F.col("__a_ts")
    condition = (F.floor(F.col(EVENT_TS) / width) == F.col("__bucket")) & (
        F.col(EVENT_TS) >= low) & (F.col(EVENT_TS) <= high)
    for key in keys:
        condition = condition & (F.col(key) == F.col(f"__k_{key}"))
    return frame.join(partner, condition, "left_semi")


def _match(spark: SparkSession, kept: DataFrame, data: dict[str, Any],
           pattern: dict[str, Any]) -> DataFrame:
    """Group the acquired events by key and overlapping time range; run the matcher."""
    window = pattern["window"]
    keys = list(pattern["partition_by"])
    negation = any(o["kind"] == "negated" for o in pattern["operands"])
    bounds = kept.agg(F.min(EVENT_TS).alias("lo"), F.max(EVENT_TS).alias("hi")).first()
    start = bounds["lo"] if bounds["lo"] is not None else 0.0
    span = (bounds["hi"] or 0.0) - start
    slices = 4 * spark.sparkContext.defaultParallelism
    back = window or 0.0
    ahead = back if negation else 0.0
    width = max(4 * back, span / slices, 1e-9)
    first = F.floor((F.col(EVENT_TS) - ahead - start) / width).cast("long")
    last = F.floor((F.col(EVENT_TS) + back - start) / width).cast("long")
    ranged = kept.withColumn(RANGE, F.explode(F.sequence(first, last)))
    emit_fields = [T.StructField(a, spark_type(t), True)
                   for a, t in pattern["emit_types"].items()]
    schema = T.StructType([T.StructField(MATCH_COLUMN, T.StringType(), True),
                           T.StructField(EVENT_TS, T.DoubleType(), True),
                           T.StructField(EVENT_ID, T.LongType(), True), *emit_fields,
                           T.StructField("__cap", T.LongType(), True),
                           T.StructField("__rows", T.LongType(), True)])
    name = pattern["name"]
    columns = [f.name for f in schema.fields]

    def evaluate(group: pd.DataFrame) -> pd.DataFrame:
        job = job_from_json(data)
        spec = job.pattern(name)
        index = int(group[RANGE].iloc[0])
        own = (start + index * width, start + (index + 1) * width)
        out = evaluate_partition(group, job, spec, own=own, with_complex=True)
        stats = pd.DataFrame({c: pd.Series([None], dtype=object) for c in columns})
        stats["__cap"], stats["__rows"] = out.cap_hits, len(group)
        if out.complex is None:
            return stats
        return pd.concat([out.complex.reindex(columns=columns).astype(object), stats],
                         ignore_index=True)

    return ranged.groupBy(*keys, RANGE).applyInPandas(evaluate, schema)


def _write(outputs: list[DataFrame], out_dir: str, output_format: str, metrics: dict,
           seconds: dict, clock: float, data: dict[str, Any]) -> None:
    """Write matches and metrics into a fresh directory, then swap it into place."""
    parent = os.path.dirname(os.path.abspath(out_dir)) or "."
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".cepplan-run-", dir=parent)
    try:
        union = outputs[0]
        for frame in outputs[1:]:
            union = union.unionByName(frame)
        if output_format == "parquet":
            union.withColumnRenamed(MATCH_COLUMN, "match").withColumn(
                "pattern", F.get_json_object("match", "$.pattern")).coalesce(1).write.parquet(
                os.path.join(staging, "matches.parquet"))
        else:
            with open(os.path.join(staging, "matches.jsonl"), "w", encoding="utf-8") as handle:
                for row in union.toLocalIterator():
                    handle.write(row[MATCH_COLUMN] + "\n")
        seconds["write"] = time.perf_counter() - clock
        metrics["plan"] = data.get("plan", {})
        metrics["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
        with open(os.path.join(staging, "metrics.json"), "w", encoding="utf-8") as handle:
            json.dump(metrics, handle, indent=2)
        if os.path.isdir(out_dir):
            old = staging + ".old"
            os.replace(out_dir, old)
            os.replace(staging, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """`spark-submit job.py --job job.json --events PATH... --out DIR [--format parquet]`."""
    parser = argparse.ArgumentParser(prog="job.py")
    parser.add_argument("--job", required=True, help="the job data (job.json)")
    parser.add_argument("--events", required=True, nargs="+", help="event files")
    parser.add_argument("--out", required=True, help="output directory (replaced on success)")
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    args = parser.parse_args(argv)
    with open(args.job, encoding="utf-8") as handle:
        data = json.load(handle)
    spark = SparkSession.builder.appName(f"cepplan {data['workload'].get('name', '')}") \
        .config("spark.sql.session.timeZone", "UTC").getOrCreate()
    try:
        metrics = run_job(spark, data, args.events, args.out, output_format=args.format,
                          say=lambda text: print(f"cepplan: {text}", file=sys.stderr,
                                                 flush=True))
    except SourceError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 2
    finally:
        spark.stop()
    print(json.dumps({"matches": metrics["matches"]}))
    return 0
