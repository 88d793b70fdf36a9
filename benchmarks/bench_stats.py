"""Statistics job vs a bare Spark scan of the same Parquet file (issue 3's target: at most 3x).

Generates 10 million synthetic events (1 million with --quick) as Parquet, then times, in one
SparkSession: a bare job that reads the file and counts rows per type; the full statistics job
(rates, occurrence models, keys, selectivities); then both again. The first round pays the
JVM's code generation and JIT warm-up (more for the statistics job's many queries); the second
round is the steady state. Prints events/s and both ratios.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pyspark.sql import functions as F

from cepplan.stats.collect import collect_statistics
from cepplan.stats.spark_session import stats_session
from cepplan.stats.synth import synthesize, zipf_rates
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload
from cepplan.workload.model import OccurrenceModel

OUT = Path(__file__).parent / "out"
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

    def statistics() -> tuple[float, int]:
        begin = time.perf_counter()
        document = collect_statistics(spark, [str(path)], workload, time_step=1.0)
        return time.perf_counter() - begin, document["rows"]["read"]

    timings = []
    for _ in range(2):
        scan = bare()
        seconds, rows = statistics()
        timings.append((scan, seconds))
    print(f"{'round':<8}{'job':<36}{'seconds':>10}{'events/s':>14}")
    for index, (scan, seconds) in enumerate(timings, start=1):
        label = "cold" if index == 1 else "warm"
        print(f"{label:<8}{'bare scan (read + count per type)':<36}{scan:>10.2f}"
              f"{rows / scan:>14,.0f}")
        print(f"{label:<8}{'statistics job':<36}{seconds:>10.2f}{rows / seconds:>14,.0f}")
        print(f"{label:<8}ratio statistics / bare scan: {seconds / scan:.2f}x (target <= 3x)")
    print(f"{rows:,} events")
