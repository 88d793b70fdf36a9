"""Statistics job vs a bare Spark scan of the same Parquet file (issue 3's target: at most 3x).

Generates 10 million synthetic events (1 million with --quick) as Parquet, then times, in one
SparkSession: a bare job that reads the file and counts rows per type (Spark reads only the
type column for it); the same reading every column (what the statistics job must read to
validate rows); the full statistics job
(rates, occurrence models, keys, selectivities); four rounds of both. The first round pays the
JVM's code generation and JIT warm-up; the median of the others is the steady state (the
machine may be shared, so single timings are noisy). Prints events/s and the ratios.
"""

from __future__ import annotations

import time
from pathlib import Path
from statistics import median as statistics_median

import numpy as np
from pyspark.sql import functions as F

from cepplan.stats.collect import collect_statistics
from cepplan.stats.spark_session import stats_session
from cepplan.stats.synth import synthesize, zipf_rates
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload
from cepplan.workload.model import OccurrenceModel

OUT = Path(__file__).parent / "out"
ROUNDS = 4  # round 1 pays JVM code generation and JIT warm-up
WORKLOAD = {
    "format": "cepplan.workload/1", "name": "bench-stats", "time_unit": "s",
    "source": {"format": "parquet", "type_column": "kind", "time_column": "t",
               "key_columns": ["g"]},
    "schemas": {"E": {"x": "double", "y": "double", "n": "long", "g": "string"}},
    "event_types": {name: {"schema": "E"} for name in ("A", "B", "C", "D", "F", "G")},
    "patterns": [
        {"name": "rise", "structure": ["SEQ", "a:A", "b:B", "c:C"],
         "where": ["a.x < b.x", "b.x < c.x", "a.n > 50"], "within": 2},
        {"name": "run", "structure": ["SEQ", ["KLEENE", "k:D"], "e:F"],
         "where": ["k.x < NEXT(k.x)", "e.y < 20"], "within": 5},
        {"name": "pair", "structure": ["AND", "a:A", "g:G"], "partition_by": ["g"],
         "where": ["abs(a.y - g.y) < 10"], "within": 1},
    ],
}


def main(quick: bool) -> None:
    """Generate, then time the bare scan and the statistics job side by side."""
    events = 1_000_000 if quick else 10_000_000
    workload = build_workload(WORKLOAD)
    path = OUT / f"stats_{events}.parquet"
    start = time.perf_counter()
    if not path.exists():
        chain = ((0.8, 0.2), (0.4, 0.6))  # bursty D: 1/3 event per time unit
        bursty = OccurrenceModel("markov", order=1, time_step=1.0, transition=chain)
        poisson_types = [t for t in workload.event_types if t != "D"]
        rates = zipf_rates(poisson_types, 100.0 - 1 / 3, 0.255, np.random.default_rng(0))
        result = synthesize(workload, duration=events / 100.0, seed=0, rates=rates,
                            models={"D": bursty}, truth_draws=10_000)
        write_events(result.events, workload, path)
        print(f"generated {len(result.events):,} events in {time.perf_counter() - start:.1f} s "
              f"-> {path} ({path.stat().st_size / 1e6:.0f} MB)", flush=True)
    spark = stats_session("local[*]", driver_memory="8g")
    spark.read.parquet(str(path)).limit(1).collect()  # JVM and reader warm-up

    def bare() -> float:
        begin = time.perf_counter()
        spark.read.parquet(str(path)).groupBy("kind").agg(F.count(F.lit(1))).collect()
        return time.perf_counter() - begin

    def bare_all_columns() -> float:
        begin = time.perf_counter()
        frame = spark.read.parquet(str(path))
        frame.groupBy("kind").agg(*(F.count(c) for c in frame.columns)).collect()
        return time.perf_counter() - begin

    def statistics() -> tuple[float, int]:
        begin = time.perf_counter()
        document = collect_statistics(spark, [str(path)], workload, time_step=1.0)
        return time.perf_counter() - begin, document["rows"]["read"]

    timings = []
    for _ in range(ROUNDS):
        scan, wide = bare(), bare_all_columns()
        seconds, rows = statistics()
        timings.append((scan, wide, seconds))
    print(f"{'round':<6}{'bare scan s':>12}{'all-columns scan s':>20}{'stats job s':>13}"
          f"{'stats events/s':>16}{'ratio':>8}{'ratio all-col':>15}")
    for index, (scan, wide, seconds) in enumerate(timings, start=1):
        print(f"{index:<6}{scan:>12.2f}{wide:>20.2f}{seconds:>13.2f}{rows / seconds:>16,.0f}"
              f"{seconds / scan:>7.2f}x{seconds / wide:>14.2f}x")
    scan, wide, seconds = (statistics_median([t[i] for t in timings[1:]]) for i in range(3))
    print(f"{rows:,} events; warm rounds (2..{ROUNDS}) median: bare scan {scan:.2f} s "
          f"({rows / scan:,.0f} events/s), all-columns scan {wide:.2f} s, statistics job "
          f"{seconds:.2f} s ({rows / seconds:,.0f} events/s); ratio {seconds / scan:.2f}x to "
          f"the bare scan (target <= 3x), {seconds / wide:.2f}x to the all-columns scan")
