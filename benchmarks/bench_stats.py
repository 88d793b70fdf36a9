"""Statistics: the Spark job against a bare Spark scan of the same Parquet file, the in-process
engine against the Spark one as a user runs them, and `cepplan stats` on the fraud example.

1. In one SparkSession, four rounds each: the floor, a bare job that reads the file with the
   same source options and touches every column the statistics need (type, time, keys and
   each attribute, which the reject checks read: non-NULL values per column and type); for
   reference the same counting rows per type only (Spark then reads just the type column);
   and the Spark statistics job, split into its two Spark scans and the driver-side
   summarisation (shared with the local engine). Round 1 pays the JVM's code generation and
   JIT warm-up; the median of rounds 2-4 is the steady state. JVM start is not counted here.
2. `python -m cepplan stats FILE --engine local` and `--engine spark` as subprocesses: wall
   time from process start to stats.json written (JVM start included for Spark), and the two
   documents compared (same counts, rates and selectivities).
3. `python -m cepplan stats examples/fraud/events.csv --engine local`, three runs.
The machine may be shared: ratios are measured side by side in one run; `uptime` is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

import numpy as np

from cepplan.stats.synth import synthesize, zipf_rates
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload
from cepplan.workload.columns import merged_attribute_types
from cepplan.workload.model import OccurrenceModel
from cepplan.workload.source_spec import attribute_types

ROOT = Path(__file__).resolve().parent.parent
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
    """Generate once, then the three comparisons."""
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
          f"{os.getloadavg()[2]:.1f} on {os.cpu_count()} cores", flush=True)
    events = 1_000_000 if quick else 10_000_000
    workload = build_workload(WORKLOAD)
    path = _events_file(workload, events)
    spark_job_vs_scan(workload, path)
    workload_path = OUT / "bench_stats_workload.json"
    workload_path.write_text(json.dumps(WORKLOAD))
    local_vs_spark(workload_path, _events_file(workload, 1_000_000))
    fraud_example()


def _events_file(workload, events: int) -> Path:
    path = OUT / f"stats_{events}.parquet"
    if not path.exists():
        start = time.perf_counter()
        OUT.mkdir(exist_ok=True)
        chain = ((0.8, 0.2), (0.4, 0.6))  # bursty D: 1/3 event per time unit
        bursty = OccurrenceModel("markov", order=1, time_step=1.0, transition=chain)
        poisson_types = [t for t in workload.event_types if t != "D"]
        rates = zipf_rates(poisson_types, 100.0 - 1 / 3, 0.255, np.random.default_rng(0))
        result = synthesize(workload, duration=events / 100.0, seed=0, rates=rates,
                            models={"D": bursty}, truth_draws=10_000)
        write_events(result.events, workload, path)
        print(f"generated {len(result.events):,} events in {time.perf_counter() - start:.1f} s "
              f"-> {path} ({path.stat().st_size / 1e6:.0f} MB)", flush=True)
    return path


def spark_job_vs_scan(workload, path: Path) -> None:
    """Part 1: the Spark statistics job (and its parts) against bare scans, warm."""
    from pyspark.sql import functions as F

    from cepplan.stats.collect import collect_statistics, scan_columns
    from cepplan.stats.spark_scan import SparkScan
    from cepplan.stats.spark_session import stats_session

    spark = stats_session("local[*]", driver_memory="8g")
    spark.read.parquet(str(path)).limit(1).collect()  # reader warm-up

    def timed(run) -> float:
        begin = time.perf_counter()
        run()
        return time.perf_counter() - begin

    source = workload.source
    needed = list(dict.fromkeys([source.type_column, source.time_column,
                                 *source.key_columns, *merged_attribute_types(
                                     attribute_types(workload).values())]))

    def floor() -> None:
        frame = spark.read.parquet(str(path)).select(*needed)
        frame.groupBy(source.type_column).agg(*(F.count(c) for c in needed)).collect()

    def type_only() -> None:
        spark.read.parquet(str(path)).groupBy(source.type_column).agg(
            F.count(F.lit(1))).collect()

    class Timed(SparkScan):
        """The Spark scan, timing its two passes."""

        def step_counts(self, time_step, presample):
            begin = time.perf_counter()
            try:
                return super().step_counts(time_step, presample)
            finally:
                self.seconds = [time.perf_counter() - begin]

        def groups_and_sample(self, *args):
            begin = time.perf_counter()
            try:
                return super().groups_and_sample(*args)
            finally:
                self.seconds.append(time.perf_counter() - begin)

    columns, groups = scan_columns(workload)
    rows = 0
    timings = []
    for _ in range(ROUNDS):
        scan_s, wide_s = timed(floor), timed(type_only)
        begin = time.perf_counter()
        scan = Timed(spark, [str(path)], workload, columns, groups)
        document = collect_statistics(scan, [str(path)], workload, time_step=1.0)
        job_s = time.perf_counter() - begin
        rows = document["rows"]["read"]
        timings.append((scan_s, wide_s, job_s, *scan.seconds, job_s - sum(scan.seconds)))
    print(f"{'round':<6}{'floor':>8}{'type only':>10}{'stats job':>10}{'scan 1':>8}"
          f"{'scan 2':>8}{'driver':>8}{'job/floor':>10}")
    for index, t in enumerate(timings, start=1):
        print(f"{index:<6}{t[0]:>8.2f}{t[1]:>10.2f}{t[2]:>10.2f}{t[3]:>8.2f}{t[4]:>8.2f}"
              f"{t[5]:>8.2f}{t[2] / t[0]:>9.2f}x")
    warm = [median(t[i] for t in timings[1:]) for i in range(6)]
    print(f"{rows:,} events, Spark, warm median (rounds 2..{ROUNDS}): floor (same file and "
          f"options, the {len(needed)} columns the statistics read) {warm[0]:.2f} s, type "
          f"column only {warm[1]:.2f} s, statistics job {warm[2]:.2f} s (scan 1 {warm[3]:.2f}, "
          f"scan 2 {warm[4]:.2f}, driver-side summary {warm[5]:.2f}); job / floor "
          f"{warm[2] / warm[0]:.2f}x (target <= 3x), Spark part of the job (scans 1+2) / "
          f"floor {(warm[3] + warm[4]) / warm[0]:.2f}x, job / type-only scan "
          f"{warm[2] / warm[1]:.2f}x", flush=True)
    spark.stop()


def _cli(*args: str) -> float:
    begin = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cepplan", "stats", *args, "-q"], cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - begin
    if done.returncode:
        raise RuntimeError(f"cepplan stats failed: {done.stderr[-2000:]}")
    return seconds


def local_vs_spark(workload_path: Path, path: Path) -> None:
    """Part 2: both engines as a user runs them (process start to stats.json written)."""
    outputs = {e: OUT / f"stats_{e}.json" for e in ("local", "spark")}
    seconds = {e: _cli(str(path), "-w", str(workload_path), "-o", str(outputs[e]),
                       "--engine", e) for e in ("local", "spark")}
    documents = {e: json.loads(p.read_text()) for e, p in outputs.items()}
    same = all(documents["local"][k] == documents["spark"][k]
               for k in ("rows", "models", "keys"))
    close = all(abs(documents["local"]["rates"][t] - r) <= 1e-9 * r
                for t, r in documents["spark"]["rates"].items())
    sel_same = documents["local"]["selectivities"] == documents["spark"]["selectivities"]
    rows = documents["local"]["rows"]["read"]
    local, remote = seconds["local"], seconds["spark"]
    print(f"{rows:,} events, process start to stats.json: local engine {local:.2f} s, "
          f"Spark engine {remote:.2f} s; Spark / local {remote / local:.1f}x (target >= 5x); "
          f"same rows/models/keys: {same}, rates within 1e-9: {close}, identical "
          f"selectivities: {sel_same}", flush=True)


def fraud_example() -> None:
    """Part 3: the walk-through's `cepplan stats` with the local engine."""
    fraud = ROOT / "examples" / "fraud"
    runs = [_cli(str(fraud / "events.csv"), "-w", str(fraud / "workload.json"),
                 "-o", str(OUT / "stats_fraud.json"), "--engine", "local") for _ in range(3)]
    print(f"cepplan stats on examples/fraud/events.csv (7,851 rows), local engine: "
          f"{', '.join(f'{s:.2f}' for s in runs)} s (median {median(runs):.2f} s, target < 2 s)",
          flush=True)
