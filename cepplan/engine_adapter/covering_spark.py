"""The covering stage for the Spark engine: the executors keep only the rows the consumer
operators read (their types and columns, inside the area any interest covers), the driver
collects them and runs the same in-process stage, so the cover is solved where OR-Tools is.
Shipped in the job's runtime zip; the Spark job calls `write_covering` before metrics.json."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cepplan.costmodels.interests import region_at
from cepplan.engine_adapter.covering_run import (
    CoveringRun,
    operator_columns,
    results_lines,
    run_covering,
)
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE


def covering_rows(events: DataFrame, section: Mapping[str, Any]) -> pd.DataFrame:
    """The canonical rows the covering stage needs, collected to the driver."""
    parts = []
    for name, operator in section["operators"].items():
        queries = [q for q in section["queries"] if q["operator"] == name]
        if not queries:
            continue
        times = sorted({p[0] for q in queries for p in q.get("track", ())}) or [0.0]
        regions = [region_at(q, t) for q in queries for t in times]
        x, y = F.col(operator["x"]), F.col(operator["y"])
        inside = (x.between(min(r[0] for r in regions), max(r[2] for r in regions))
                  & y.between(min(r[1] for r in regions), max(r[3] for r in regions)))
        parts.append(events.filter((F.col(EVENT_TYPE) == operator["event_type"]) & inside)
                     .select(*sorted(operator_columns(operator))).toPandas())
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=[EVENT_TYPE, EVENT_TS, EVENT_ID])


def run_covering_spark(events: DataFrame, section: Mapping[str, Any], *,
                       solver: str | None = None) -> CoveringRun:
    """`run_covering` over a Spark frame of canonical, valid rows."""
    return run_covering(covering_rows(events, section), section, solver=solver)


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
