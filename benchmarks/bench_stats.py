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

import contextlib
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
    sizes = [1_000_000] if quick else [10_000_000, 1_000_000]
    workload = build_workload(WORKLOAD)
    spark_job_vs_scan(workload, [_events_file(workload, n) for n in sizes])
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


def _jvm_cpu() -> float:
    """CPU seconds used so far by this process's children (the Spark JVM), from /proc: less
    distorted than wall time when others load the machine (NaN off Linux)."""
    total, ticks = 0, os.sysconf("SC_CLK_TCK")
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                    if int(fields[1]) == os.getpid():
                        total += int(fields[11]) + int(fields[12])
    except OSError:
        return float("nan")
    return total / ticks


def spark_job_vs_scan(workload, paths: list[Path]) -> None:
    """Part 1: the Spark statistics job (and its parts) against bare scans, warm, per file,
    in one session; the job also without gathering the sample during the count (the
    sample scan then runs after it), for comparison."""
    from pyspark.sql import functions as F

    from cepplan.stats.collect import collect_statistics, scan_columns
    from cepplan.stats.spark_scan import SparkScan
    from cepplan.stats.spark_session import stats_session

    spark = stats_session("local[*]", driver_memory="8g")
    source = workload.source
    needed = list(dict.fromkeys([source.type_column, source.time_column,
                                 *source.key_columns, *merged_attribute_types(
                                     attribute_types(workload).values())]))

    class Timed(SparkScan):
        """The Spark scan, timing its two calls; `early=False` gathers nothing beside the
        count (the sample is then read after it)."""

        early = True

        def step_counts(self, time_step, presample):
            begin = time.perf_counter()
            try:
                return super().step_counts(time_step, presample if self.early else [])
            finally:
                self.seconds = [time.perf_counter() - begin]

        def groups_and_sample(self, *args):
            begin = time.perf_counter()
            try:
                return super().groups_and_sample(*args)
            finally:
                self.seconds.append(time.perf_counter() - begin)

    columns, groups = scan_columns(workload)
    for path in paths:
        spark.read.parquet(str(path)).limit(1).collect()  # reader warm-up

        def floor(path: Path = path) -> None:
            frame = spark.read.parquet(str(path)).select(*needed)
            frame.groupBy(source.type_column).agg(*(F.count(c) for c in needed)).collect()

        def type_only(path: Path = path) -> None:
            spark.read.parquet(str(path)).groupBy(source.type_column).agg(
                F.count(F.lit(1))).collect()

        def job(early: bool, path: Path = path) -> tuple[int, list[float]]:
            scan = Timed(spark, [str(path)], workload, columns, groups)
            scan.early = early
            document = collect_statistics(scan, [str(path)], workload, time_step=1.0)
            return document["rows"]["read"], scan.seconds

        def timed(run) -> tuple[float, float]:
            cpu, begin = _jvm_cpu(), time.perf_counter()
            outcome = run()
            return time.perf_counter() - begin, _jvm_cpu() - cpu, outcome

        rows = 0
        timings = []
        for _ in range(ROUNDS):
            floor_s, floor_cpu, _ = timed(floor)
            type_s, _, _ = timed(type_only)
            job_s, job_cpu, (rows, parts) = timed(lambda: job(True))
            late_s, late_cpu, _ = timed(lambda: job(False))
            timings.append((floor_s, type_s, job_s, *parts, job_s - sum(parts), late_s,
                            floor_cpu, job_cpu, late_cpu))
        print(f"{rows:,} events: {'round':<6}{'floor':>7}{'type only':>10}{'stats job':>10}"
              f"{'count':>7}{'sample':>7}{'driver':>7}{'job/floor':>10}{'sample after':>13}"
              f"{'JVM CPU job/floor':>18}")
        for index, t in enumerate(timings, start=1):
            print(f"{'':>{len(f'{rows:,} events: ')}}{index:<6}{t[0]:>7.2f}{t[1]:>10.2f}"
                  f"{t[2]:>10.2f}{t[3]:>7.2f}{t[4]:>7.2f}{t[5]:>7.2f}{t[2] / t[0]:>9.2f}x"
                  f"{t[6] / t[0]:>12.2f}x{t[8] / t[7]:>17.2f}x")
        warm = [median(t[i] for t in timings[1:]) for i in range(10)]
        print(f"{rows:,} events, Spark, warm median (rounds 2..{ROUNDS}): floor (same file and "
              f"options, the {len(needed)} columns the statistics read) {warm[0]:.2f} s, type "
              f"column only {warm[1]:.2f} s, statistics job {warm[2]:.2f} s (count "
              f"{warm[3]:.2f}, then waiting for the sample {warm[4]:.2f}, driver-side summary "
              f"{warm[5]:.2f}); job / floor {warm[2] / warm[0]:.2f}x (target <= 3x); with the "
              f"sample read after the count {warm[6]:.2f} s, {warm[6] / warm[0]:.2f}x; JVM CPU "
              f"job / floor {warm[8] / warm[7]:.2f}x (sample after: {warm[9] / warm[7]:.2f}x); "
              f"job / type-only scan {warm[2] / warm[1]:.2f}x", flush=True)
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
