"""The generated Structured Streaming job (`cepplan generate PLAN --streaming`):

    spark-submit --py-files runtime.zip job.py --follow DIR|tcp://HOST:PORT --out DIR
        --checkpoint DIR [--trigger SECONDS] [--progress] [--verbose]

`readStream` of the followed directory (each new file whole) or of a socket (lines), one
stateful step per micro-batch and key group (`stream_state.StreamStep`: the in-process
stream matcher on the events of the keys the group holds), a
JSON-lines file sink partitioned by output (`OUT/output=matches/`, `output=late-events/`, ...)
with its checkpoint in `CHECKPOINT/spark`. The stream ends (matched to the end, as a finished
file) once a file `_END` appears in the followed directory or a file appears in
`CHECKPOINT/end/` (what `cepplan run` writes on SIGINT / SIGTERM); `OUT/metrics.json` is then
written from the outputs the sink committed (docs/engine.md, "Live streams on Spark").
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.state import GroupStateTimeout

from cepplan.engine_adapter.local.checkpoint import job_digest
from cepplan.engine_adapter.local.stream_source import END_MARKER, tcp_address
from cepplan.engine_adapter.runtime.arrivals import latency_figures
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.timed_out_counts import with_timed_out
from cepplan.engine_adapter.spark.stream_plans import PLANS_FOLDER
from cepplan.engine_adapter.spark.stream_state import (
    FIGURES,
    INPUT,
    LATENCY,
    OUTPUT,
    PROGRESS,
    PROGRESS_LINE,
    StreamStep,
    key_attributes,
    merged_figures,
    numbered,
    progress_figures,
    state_schema,
)
from cepplan.errors import InputError
from cepplan.fileio import write_bytes_atomic
from cepplan.terminal import echo

END_FOLDER = "end"  # in the checkpoint: a file here ends the stream
IDENTITY = "cepplan-stream.json"  # in the checkpoint: the job, source and output it is for
KEY_GROUPS = "key-groups.json"  # in the checkpoint: how many key groups its state is in
STOP_PREFIX = "stop-"  # an end marker written on SIGINT / SIGTERM (else "end-")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the streaming query until the stream ends; exit 2 with one line on bad input."""
    parser = argparse.ArgumentParser(prog="job.py")
    parser.add_argument("--job", required=True, help="the job data (job.json)")
    parser.add_argument("--follow", required=True, help="a directory or tcp://HOST:PORT")
    parser.add_argument("--out", required=True, help="the sink's directory")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint")
    parser.add_argument("--trigger", type=float, default=1.0, help="seconds per micro-batch")
    parser.add_argument("--verbose", action="store_true", help="keep Spark's own log")
    parser.add_argument("--progress", action="store_true",
                        help=f"a line per micro-batch on the output ({PROGRESS_LINE.strip()} "
                        "JSON)")
    args = parser.parse_args(argv)
    with open(args.job, encoding="utf-8") as handle:
        data = json.load(handle)
    try:  # before Spark starts
        check_source(data, args.follow)
        claim_checkpoint(Path(args.checkpoint), data, args.follow, args.out)
    except InputError as err:
        echo(f"error: {err}", err=True)
        return 2
    ends = Path(args.checkpoint) / END_FOLDER
    ends.mkdir(parents=True, exist_ok=True)
    (Path(args.checkpoint) / PLANS_FOLDER).mkdir(exist_ok=True)
    spark = SparkSession.builder.appName(f"cepplan {data['workload'].get('name', '')} stream") \
        .config("spark.sql.session.timeZone", "UTC").getOrCreate()
    if not args.verbose:
        spark.sparkContext.setLogLevel("ERROR")
    values = group_values(spark, key_groups(data, Path(args.checkpoint),
                                            spark.sparkContext.defaultParallelism))
    spark.conf.set("spark.sql.shuffle.partitions", str(len(values)))  # a task per key group
    try:
        query = stream_query(spark, data, args.follow, ends, args.trigger, values) \
            .observe(PROGRESS, F.collect_list(F.when(F.col("output") == PROGRESS,
                                                     F.col("value"))).alias("groups")) \
            .writeStream.format("text").partitionBy("output").outputMode("append") \
            .option("path", args.out) \
            .option("checkpointLocation", str(Path(args.checkpoint) / "spark")) \
            .trigger(processingTime=f"{args.trigger} seconds").start()
        meter = _Progress() if args.progress else None
        stopped = _until_the_end(spark, query, args.follow, ends, args.out, args.trigger,
                                 meter)
        metrics = committed_metrics(spark, args.out)
    except StreamingQueryException as err:
        if not args.follow.startswith("tcp://") or "Connection refused" not in str(err):
            raise
        echo(f"error: {args.follow}: cannot connect: Connection refused", err=True)
        return 2
    finally:
        spark.stop()
    metrics["stream"]["stopped_by_signal"] = stopped
    with_timed_out(metrics, data["patterns"])
    write_bytes_atomic(Path(args.out) / "metrics.json", json.dumps(metrics, indent=2).encode())
    return 0


def check_source(data: dict[str, Any], follow: str) -> None:
    """An `InputError` for a source the job cannot follow: a local directory that does not
    exist, a bad TCP address, a workload source not read as lines (Parquet)."""
    fmt = data["reader"]["source"]["format"]
    if fmt not in ("csv", "jsonl"):
        raise InputError.single(follow, "", f"a stream is read as CSV or JSON lines; the "
                                f"workload's source is {fmt}")
    if follow.startswith("tcp://"):
        tcp_address(follow)
    elif "://" not in follow and not os.path.isdir(follow):
        raise InputError.single(follow, "", "no such directory to follow"
                                if not os.path.exists(follow) else "is not a directory")


def claim_checkpoint(place: Path, data: dict[str, Any], follow: str, out: str | Path) -> None:
    """`place` holds the checkpoint of this stream — the job `data` following `follow` into
    `out` — (a restart) or is new or empty (then it is claimed for it); an `InputError` for
    anything else."""
    identity = {"job": job_digest(data), "source": _real(follow), "output": _real(str(out))}
    if place.exists() and not place.is_dir():
        raise InputError.single(str(place), "", "is a file; --checkpoint needs a directory")
    marker = place / IDENTITY
    if marker.exists():
        recorded = json.loads(marker.read_text())
        for key, what in (("job", "plan or workload"), ("source", "followed source"),
                          ("output", "output directory")):
            if recorded.get(key) != identity[key]:
                raise InputError.single(str(place), "", f"was written for another {what}; "
                                        "give the same arguments as the run it continues, "
                                        "or a new --checkpoint")
        return
    if place.is_dir() and any(place.iterdir()):
        raise InputError.single(str(place), "", "is not empty and holds no checkpoint of a "
                                "stream on Spark: give a new or empty directory, or the one "
                                "of the run to continue")
    place.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(marker, json.dumps(identity).encode())


def _real(path: str) -> str:
    return path if "://" in path else os.path.realpath(path)


def key_groups(data: dict[str, Any], checkpoint: Path, parallelism: int) -> int:
    """How many key groups the stream is matched in: one without a key all patterns share,
    else the number recorded in `checkpoint` (a restart keeps its groups' state), else
    `parallelism` for a new stream and one for a stream a version without key groups
    started (its state is one group's); recorded."""
    if not key_attributes(job_from_json(data)):
        return 1
    recorded = checkpoint / KEY_GROUPS
    if not recorded.exists():
        started = (checkpoint / "spark" / "offsets").is_dir()
        groups = 1 if started else max(parallelism, 1)
        write_bytes_atomic(recorded, json.dumps({"key_groups": groups}).encode())
    return int(json.loads(recorded.read_text())["key_groups"])


def group_values(spark: SparkSession, groups: int) -> list[int]:
    """A grouping value per key group, each hashed by Spark onto a shuffle partition of its
    own (out of `groups`), so the groups run as separate tasks."""
    if groups == 1:
        return [0]
    candidate = F.col("id").cast("int")
    hashed = spark.range(64 * groups).select(
        candidate.alias("value"), F.pmod(F.hash(candidate), F.lit(groups)).alias("task")) \
        .groupBy("task").agg(F.min("value").alias("value")).toPandas()
    first = dict(zip(hashed["task"], hashed["value"], strict=True))
    return [int(first[task]) for task in range(groups)]


def stream_query(spark: SparkSession, data: dict[str, Any], follow: str, ends: Path,
                 trigger: float, values: list[int]) -> DataFrame:
    """The stream's rows (files or socket lines, and the end markers), each given to every
    key group (grouping `values`), through the stateful step: rows of (output, JSON line)."""
    if follow.startswith("tcp://"):
        host, port = tcp_address(follow)
        lines = spark.readStream.format("socket").option("host", host) \
            .option("port", port).option("includeTimestamp", True) \
            .option("numPartitions", 1).load()  # one partition: the lines in order
        lines = lines.mapInArrow(numbered, T.StructType([*lines.schema.fields,
                                                         T.StructField("line", T.LongType())]))
        events = lines.select(F.lit("").alias("source"), "line",
                              F.col("timestamp").cast("double").alias("arrived"),
                              F.col("value"), F.lit(False).alias("end"))
        events = events.withColumn("plan", F.lit(False))
    else:
        events = _whole_files(spark, follow, end=False)
    both = events.unionByName(_whole_files(spark, str(ends), end=True))
    if data.get("adaptive"):  # the plans to switch to (`stream_plans.py`)
        both = both.unionByName(_whole_files(spark, str(ends.parent / PLANS_FOLDER),
                                             end=False, plan=True))
    both = both.withColumn("key", F.explode(F.array(*[F.lit(v) for v in values])))
    return both.select([F.col(f.name).cast(f.dataType) for f in INPUT]).groupBy("key") \
        .applyInPandasWithState(StreamStep(data, trigger, values), OUTPUT, state_schema(data),
                                "append", GroupStateTimeout.NoTimeout)


def _whole_files(spark: SparkSession, folder: str, *, end: bool,
                 plan: bool = False) -> DataFrame:
    """Each new file of `folder` as one row: its path, modification time and text (names
    starting with `.` or `_` are not read: write hidden, then rename), marked as an end
    marker (`end`), a plan (`plan`) or events."""
    files = spark.readStream.format("text").option("wholetext", True).load(folder)
    return files.select(F.col("_metadata.file_path").alias("source"),
                        F.lit(0).alias("line"),
                        F.col("_metadata.file_modification_time").cast("double").alias("arrived"),
                        F.col("value"), F.lit(end).alias("end"), F.lit(plan).alias("plan"))


def _until_the_end(spark: SparkSession, query, follow: str, ends: Path, out: str,
                   trigger: float, meter: _Progress | None) -> bool:
    """Wait until the stream ends (`_END` in the followed directory, or an end marker) and
    the micro-batch that processed the marker is committed, then stop the query; whether a
    signal asked. (`processAllAvailable` can return before that micro-batch runs.)"""
    while query.isActive:
        if meter is not None:
            meter.show(query.recentProgress)
        markers = sorted(p.name for p in ends.iterdir() if p.name[:1] not in "._")
        if not markers and "://" not in follow and (Path(follow) / END_MARKER).exists():
            write_end_marker(ends, stop=False)
            continue
        if markers and _ended(spark, out):
            query.stop()
            if meter is not None:  # the last micro-batches'
                meter.show(query.recentProgress)
            return markers[0].startswith(STOP_PREFIX)
        query.awaitTermination(min(trigger, 0.5))
    if query.exception() is not None:
        raise query.exception()
    return False


class _Progress:
    """The query's progress, a line per micro-batch on the output (`PROGRESS_LINE` and
    JSON: `cepplan run` shows it on a terminal): its key groups' figures, and events/s since
    this start."""

    def __init__(self) -> None:
        self.batch = -1
        self.first: tuple[float, int] | None = None  # (when, rows read) at the first shown

    def show(self, recent) -> None:
        """A line for each micro-batch of `recent` (the query's recent progress) not shown."""
        for progress in recent:
            if progress["batchId"] > self.batch:
                self._line(progress)

    def _line(self, progress) -> None:
        observed = progress["observedMetrics"].get(PROGRESS)
        if observed is None or not observed["groups"]:  # a micro-batch of no arrival
            return
        self.batch = progress["batchId"]
        rows = [json.loads(v) for v in observed["groups"]]
        figures = progress_figures(rows)
        for row in rows:  # an adaptive stream's drift and switch (the first group's)
            figures.update({k: v for k, v in row.items() if k in ("drift", "switch")})
        now = time.monotonic()
        if self.first is None:
            self.first = (now, figures["rows_read"])
        spent = now - self.first[0]
        figures["rate"] = (figures["rows_read"] - self.first[1]) / spent if spent > 0 else 0.0
        print(PROGRESS_LINE + json.dumps(figures), flush=True)


def _ended(spark: SparkSession, out: str) -> bool:
    """Whether the sink committed the figures of the micro-batch that ended the stream."""
    try:  # nothing committed yet: no directory, or no `output` partition in it
        return spark.read.text(out).where(F.col("output") == FIGURES).limit(1).count() > 0
    except AnalysisException:
        return False


def write_end_marker(ends: Path, *, stop: bool) -> None:
    """A file in `ends` (hidden, then renamed): the stream's next micro-batch is its last."""
    name = f"{STOP_PREFIX if stop else 'end-'}{time.time_ns()}.txt"
    (ends / f".{name}").write_text("end\n")
    (ends / f".{name}").rename(ends / name)


def committed_metrics(spark: SparkSession, out: str) -> dict[str, Any]:
    """metrics.json from what the sink committed (its log, not every file in `out`): the
    last micro-batch's figures over the key groups, each match's detection latency and, of an
    adaptive stream, the statistics each reported drift was measured with (from its progress
    row)."""
    rows = spark.read.text(out).where(F.col("output").isin(FIGURES, LATENCY, PROGRESS)) \
        .toPandas()
    metrics = merged_figures([json.loads(v) for v in rows.loc[rows["output"] == FIGURES,
                                                              "value"]])
    kept: dict[int, int] = {}  # the events kept after each micro-batch, over the key groups
    measured: dict[int, Any] = {}  # per drift report's micro-batch, its statistics
    for value in rows.loc[rows["output"] == PROGRESS, "value"]:
        progress = json.loads(value)
        kept[progress["micro_batch"]] = kept.get(progress["micro_batch"], 0) + \
            progress["state_rows"]
        if "drift" in progress:
            measured[progress["drift"]["micro_batch"]] = progress["drift"]["statistics"]
    metrics["stream"]["state_rows_max"] = max(kept.values(), default=0)
    for record in metrics["stream"].get("drifts", []):  # an adaptive stream's reports
        record["statistics"] = measured[record["micro_batch"]]
    seconds: dict[str, list[float]] = {}
    for value in rows.loc[rows["output"] == LATENCY, "value"]:
        pattern, spent = json.loads(value)
        seconds.setdefault(pattern, []).extend(spent)
    metrics["stream"]["detection_latency_seconds"] = latency_figures(
        {pattern: np.array(values) for pattern, values in seconds.items()})
    return metrics
