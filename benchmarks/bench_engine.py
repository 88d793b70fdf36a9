"""Engine benchmarks: matcher throughput, optimised vs trivial plan on Spark, memory vs window.

1. Throughput of the matcher runtime (no Spark) on synthetic events: a 3-event SEQ with join
   predicates, a 3-way AND, and a Kleene+ V-shape (seed 001 Query 1), keyed by 100 users.
2. The fraud example on Spark: the optimizer's plan and the trivial plan on the same events —
   measured rows sent to matchers and wall time next to the planner's predicted saving. The
   events are drawn at the example's inline rates and the plan is made with synth's ground
   truth of those events (`events.truth.json`, a valid stats.json), so the prediction and the
   measurement describe the same data.
3. Peak memory of the matcher (tracemalloc) as the window grows on a fixed stream: it should
   grow linearly with the events in a window (seed 001 §2.4: events stored, not partial
   matches).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import read_plan, trivial_plan
from cepplan.workload import build_workload, load_workload

ROOT = Path(__file__).resolve().parent.parent
RATE = 10.0  # events per second in the synthetic stream


def stream(n: int, seed: int = 0) -> pd.DataFrame:
    """n events of types A, B, C at RATE per second, v uniform in [0, 100), 100 users."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"__type": rng.choice(np.array(["A", "B", "C"], dtype=object), n),
                         "__ts": np.cumsum(rng.exponential(1 / RATE, n)),
                         "__id": np.arange(n, dtype=np.int64),
                         "v": rng.uniform(0, 100, n),
                         "user": rng.integers(0, 100, n).astype(str).astype(object)})


def workload(pattern: dict):
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "double", "user": "string"}} for t in "ABC"},
        "options": {"kleene_cap": 12}, "patterns": [pattern]})


PATTERNS = {
    "SEQ(a,b,c) a.v<b.v<c.v": {"name": "seq", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                               "where": ["a.v < b.v", "b.v < c.v"], "partition_by": ["user"],
                               "within": 30},
    "AND(a,b,c) a.v+b.v>150": {"name": "and3", "structure": ["AND", "a:A", "b:B", "c:C"],
                               "where": ["a.v + b.v > 150", "c.v < 10"],
                               "partition_by": ["user"], "within": 20},
    "SEQ(a,b+,c) V-shape": {"name": "vshape",
                            "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
                            "where": ["a.v < b.v", "b.v < NEXT(b.v)", "c.v < FIRST(b.v)"],
                            "partition_by": ["user"], "within": 30},
}


def throughput(n: int) -> None:
    events = stream(n)
    print(f"\n1. matcher throughput on {n:,} events ({RATE:g}/s over 100 users, no Spark)")
    print(f"{'pattern':<26} {'seconds':>9} {'events/s':>12} {'matches':>10} {'cap cuts':>9}")
    for label, pattern in PATTERNS.items():
        wl = workload(pattern)
        job = job_from_json(job_data(wl, trivial_plan(wl)))
        start = time.perf_counter()
        result = run_local(events, job)
        took = time.perf_counter() - start
        name = pattern["name"]
        print(f"{label:<26} {took:>9.2f} {n / took:>12,.0f} {len(result.matches[name]):>10,} "
              f"{result.cap_hits[name]:>9,}")


def plans_on_spark(duration: int) -> None:
    from pyspark.sql import SparkSession

    from cepplan.engine_adapter.spark_job import run_job

    print(f"\n2. fraud example on Spark (local[2]), {duration} min of synthetic events")
    example = ROOT / "examples" / "fraud" / "workload.json"
    with tempfile.TemporaryDirectory() as scratch:
        events = Path(scratch) / "events.csv"
        plan_path = Path(scratch) / "plan.json"
        cli = [sys.executable, "-c", "from cepplan.cli.app import main; main()"]
        rates = [f"--rate={t}={r}" for t, r in load_workload(example).statistics.rates.items()]
        subprocess.run([*cli, "synth", str(example), "-o", str(events), "--duration",
                        str(duration), "--seed", "7", "--truth-draws", "20000", "--range",
                        "amount=0:1500", *rates, "-q"], check=True)
        truth = Path(scratch) / "events.truth.json"  # a stats.json of the data itself
        subprocess.run([*cli, "optimize", str(example), "--stats", str(truth), "-o",
                        str(plan_path), "--quiet"], check=True)
        loaded = load_workload(example)
        plans = {"optimised": read_plan(plan_path, loaded), "trivial": trivial_plan(loaded)}
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "8").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        measured = {}
        for kind in ("trivial", "optimised", "trivial", "optimised"):  # second round: warm
            start = time.perf_counter()
            metrics = run_job(spark, job_data(loaded, plans[kind]), [str(events)],
                              str(Path(scratch) / kind), say=lambda _: None)
            measured[kind] = (metrics, time.perf_counter() - start)
        spark.stop()
    opt, trivial = measured["optimised"][0], measured["trivial"][0]
    assert opt["matches"] == trivial["matches"], "plans must not change results"
    chosen = plans["optimised"].patterns.values()
    predicted_opt = sum(p.detection.expected_cost or 0 for p in chosen)
    predicted_naive = sum(p.naive_cost or 0 for p in chosen)
    print(f"rows read: {opt['rows_read']:,}; matches (equal under both plans): {opt['matches']}")
    print(f"{'':<22} {'trivial':>12} {'optimised':>12} {'ratio':>8}")
    rows_t, rows_o = trivial["rows_to_matchers"], opt["rows_to_matchers"]
    print(f"{'rows to matchers':<22} {rows_t:>12,} {rows_o:>12,} {rows_o / rows_t:>8.3f}")
    wall_t, wall_o = measured["trivial"][1], measured["optimised"][1]
    print(f"{'wall seconds (warm)':<22} {wall_t:>12.2f} {wall_o:>12.2f} {wall_o / wall_t:>8.3f}")
    if predicted_naive:
        print(f"{'model cost (ev/min)':<22} {predicted_naive:>12.4g} {predicted_opt:>12.4g} "
              f"{predicted_opt / predicted_naive:>8.3f}   (planner's prediction)")


def memory(n: int) -> None:
    events = stream(n, seed=1).drop(columns=["user"])
    print(f"\n3. matcher peak memory vs window ({n:,} events at {RATE:g}/s, unkeyed "
          "SEQ(a,b,c), chunks of 256 triggers)")
    print(f"{'window s':>9} {'events/window':>14} {'peak MiB':>9} {'KiB per event/window':>21}")
    for window in (5, 10, 20, 40, 80):
        pattern = {"name": "seq", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                   "where": ["a.v < b.v", "b.v < c.v", "c.v - a.v > 99.9"], "within": window}
        wl = workload(pattern)
        job = job_from_json(job_data(wl, trivial_plan(wl)))
        tracemalloc.start()
        run_local(events, job, chunk_events=256)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        per_window = RATE * window
        print(f"{window:>9} {per_window:>14.0f} {peak / 2**20:>9.1f} "
              f"{peak / 1024 / per_window:>21.1f}")


def main(quick: bool = False) -> None:
    """Run the three measurements (smaller with --quick)."""
    throughput(100_000 if quick else 1_000_000)
    plans_on_spark(2_000 if quick else 20_000)
    memory(50_000 if quick else 200_000)
