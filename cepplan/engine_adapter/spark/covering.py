"""The covering stage for the Spark engine (docs/covering.md, "Engines"): Spark keeps only the
rows the consumer operators read (their types and columns, inside the area any interest
covers); the executors build each batch's selections and who may serve whom (the reuse pairs
and their precision, recall and disparity, the heavy part); the driver solves each batch's
cover with the plan's solver (where OR-Tools is); the executors then compute each operator
once per covering selection and deliver the results. The same runtime functions as the
in-process stage, so the results are the same. Shipped in the job's runtime zip; the Spark job
calls `write_covering` before metrics.json."""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Mapping
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cepplan.costmodels.interests import region_at
from cepplan.engine_adapter.runtime.covering import cover_inputs, deliver, groups
from cepplan.engine_adapter.runtime.covering_run import (
    CoveringRun,
    finished_run,
    operator_columns,
    results_lines,
    solve_cover,
)
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE

BATCH = "__batch"
_PARTS = T.StructType([T.StructField("operator", T.StringType(), False),
                       T.StructField("batch", T.LongType(), False),
                       T.StructField("part", T.BinaryType(), False)])


def covering_rows(events: DataFrame, section: Mapping[str, Any]) -> DataFrame | None:
    """The canonical rows the covering stage reads, with their batch number: each consumer
    operator's type and columns, inside the area its queries' interests cover (when batches
    are cut by time; without batches the stream's first event places the windows, so every
    event of the type is kept)."""
    batch_length = (section.get("batch") or {}).get("time")
    parts = []
    for name, operator in section["operators"].items():
        queries = [q for q in section["queries"] if q["operator"] == name]
        if not queries:
            continue
        keep = F.col(EVENT_TYPE) == operator["event_type"]
        if batch_length:
            times = sorted({p[0] for q in queries for p in q.get("track", ())}) or [0.0]
            regions = [region_at(q, t) for q in queries for t in times]
            x, y = F.col(operator["x"]), F.col(operator["y"])
            keep &= (x.between(min(r[0] for r in regions), max(r[2] for r in regions))
                     & y.between(min(r[1] for r in regions), max(r[3] for r in regions)))
        parts.append(events.filter(keep).select(*sorted(operator_columns(operator))))
    if not parts:
        return None
    rows = parts[0]
    for other in parts[1:]:
        rows = rows.unionByName(other, allowMissingColumns=True)
    batch = (F.floor(F.col(EVENT_TS) / batch_length) if batch_length else F.lit(0))
    return rows.withColumn(BATCH, batch.cast("long"))


def run_covering_spark(events: DataFrame, section: Mapping[str, Any], *,
                       solver: str | None = None) -> CoveringRun:
    """`run_covering` over a Spark frame of canonical, valid rows: selections, reuse pairs
    and delivery per batch on the executors, each batch's cover solved on the driver."""
    rows = covering_rows(events, section)
    if rows is None:
        return finished_run([], [], section)
    rows = rows.persist()
    try:
        order = {name: i for i, name in enumerate(section["operators"])}
        found = rows.groupBy(BATCH).applyInPandas(_per_batch(section, cover_inputs), _PARTS)
        inputs = sorted(found.collect(), key=lambda r: (order[r["operator"]], r["batch"]))
        solutions = [solve_cover(pickle.loads(r["part"]), r["operator"], section, solver)
                     for r in inputs]
        assignments = {(r["operator"], r["batch"]): s.assignment
                       for r, s in zip(inputs, solutions, strict=True)}
        delivered = rows.groupBy(BATCH).applyInPandas(
            _per_batch(section, _delivered(assignments)), _PARTS).collect()
        frames = [pickle.loads(r["part"]) for r in
                  sorted(delivered, key=lambda r: (order[r["operator"]], r["batch"]))]
    finally:
        rows.unpersist()
    return finished_run(frames, solutions, section)


def _per_batch(section: Mapping[str, Any], work):
    """An applyInPandas function: `work(group, section)` for each operator's group of one
    batch that has selections, pickled (pandas frames and sets between our own processes).
    Nested functions travel by value, so executors import only the runtime (no OR-Tools)."""

    def run(rows: pd.DataFrame) -> pd.DataFrame:
        found = [(g.operator, g.batch, pickle.dumps(work(g, section)))
                 for g in groups(rows.drop(columns=[BATCH]), section) if g.selections]
        return pd.DataFrame(found, columns=[f.name for f in _PARTS.fields])

    return run


def _delivered(assignments: Mapping[tuple[str, int], tuple[int, ...]]):
    def work(group, section: Mapping[str, Any]) -> pd.DataFrame:
        return deliver(group, assignments[(group.operator, group.batch)], section)

    return work


def write_covering(events: DataFrame, section: Mapping[str, Any], out_dir: str,
                   metrics: dict[str, Any]) -> None:
    """Run the consumer queries over `events` (canonical, valid rows); write their results as
    `out_dir/results/part-00000.jsonl` (as the in-process engine does) and their figures into
    `metrics` (`covering`, and the stage's seconds)."""
    clock = time.perf_counter()
    run = run_covering_spark(events, section)
    os.makedirs(os.path.join(out_dir, "results"))
    with open(os.path.join(out_dir, "results", "part-00000.jsonl"), "wb") as handle:
        handle.write(results_lines(run.results))
    metrics["covering"] = run.metrics
    metrics.setdefault("seconds", {})["covering"] = round(time.perf_counter() - clock, 3)
