"""Spark engine benchmarks: `cepplan run` on Spark against a bare Spark scan, OpenCEP, and the
trivial plan, each measured side by side in one run (process start to files written).

1. Minute bars in OpenCEP's NASDAQ format (`stock_bars`): the floor (an empty Spark job, and
   a bare Spark read + count per ticker of the file, both with cepplan's JVM settings), then
   `cepplan run` (Spark engine, default JSON-lines output) of three GOOG bars with rising
   peaks within 3 min and of SEQ(MSFT, DRIV, MSFT) (a.peak < c.peak, b.volume > 1000, 10 min).
2. OpenCEP (from OPENCEP_SRC; skipped, saying so, when unset) on the same patterns at each of
   its sizes (it must finish within its time limit): matches compared, and the throughput
   ratio of cepplan at its largest size over OpenCEP's.
3. The fraud example at `fraud` events: optimised (planned with `--engine spark`) vs trivial
   plan on Spark — wall time, CPU time (robust to other load), rows to matchers, the planner's
   predicted ratio, and the time its step-cost model predicted the steps save.
4. CPU on the same rows: the GOOG pattern's minute bars through `cepplan run` in-process and
   `cepplan run --engine spark`, CPU seconds of every process each starts (`tree_cpu`: the
   JVM and Spark's Python workers included) and their ratio (target <= 1.5), beside the CPU of
   an empty Spark job (the JVM's fixed start cost) and where the Spark run's CPU went.
Each run says which Spark plan ran (range-local or shuffle, docs/engine.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.stock_bars import write_bars, write_workload
from benchmarks.tree_cpu import Counted, run_counted
from cepplan.costmodels.engine_steps import ENGINE_COSTS
from cepplan.engine_adapter.spark.ranges import ENABLED as RANGES
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "cepplan"]
OPENCEP_LIMIT = 600  # seconds OpenCEP may take at one size
# SEQ(MSFT, DRIV, MSFT) writes 1.3 GB of JSON lines per 10^6 rows: CEPPLAN_BENCH_PATTERNS=goog
# leaves it out where the disk is small
PATTERNS = os.environ.get("CEPPLAN_BENCH_PATTERNS", "goog,msft").split(",")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def spark_seconds(script: str, *args: str) -> Counted:
    """spark-submit of a bare PySpark `script` with cepplan's settings and JVM options (the
    class archive, the client compiler): the floor cepplan's job stands on."""
    from cepplan.engine_adapter.spark.jvm_start import class_archive
    from cepplan.engine_adapter.spark.submit import submit_command

    path = Path(tempfile.mkdtemp(prefix="cepplan-floor-")) / "floor.py"
    path.write_text(script)
    archive = class_archive()
    command = submit_command("local[*]", archive, {"spark.ui.showConsoleProgress": "false"})
    done = run_counted([*command, str(path), *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    archive.keep(done.returncode == 0)
    if done.returncode:
        raise RuntimeError(f"spark-submit {path} failed (exit {done.returncode})")
    return done


EMPTY_JOB = ("from pyspark.sql import SparkSession\ns = SparkSession.builder.getOrCreate()\n"
             "s.range(1).count()\ns.stop()\n")
BARE_SCAN = ("import sys\nfrom pyspark.sql import SparkSession\n"
             "s = SparkSession.builder.getOrCreate()\ns.sparkContext.setLogLevel('ERROR')\n"
             "s.read.csv(sys.argv[1]).groupBy('_c0').count().collect()\ns.stop()\n")


def spark_run(workload: Path, events: Path, out: Path, *, plan: Path | None = None,
              extra: tuple[str, ...] = (), shuffle: bool = False, engine: str = "spark"
              ) -> tuple[Counted, dict]:
    """`cepplan run` on Spark (or `engine`) in a fresh process: (its wall and CPU seconds,
    metrics.json); `shuffle`: the shuffle plan even where the range-local plan applies."""
    if plan is None:
        plan = out.with_suffix(".plan.json")
        plan.write_text(json.dumps(trivial_plan(load_workload(workload)).to_json()))
    done = run_counted([*CLI, "run", str(plan), str(events), "--workload", str(workload),
                        "--output", str(out), "--quiet", "--engine", engine, *extra],
                       env={**os.environ, **({RANGES: "0"} if shuffle else {})})
    if done.returncode:
        raise RuntimeError(f"cepplan run --engine {engine} failed (exit {done.returncode})")
    return done, json.loads((out / "metrics.json").read_text())


def opencep(events: Path, pattern: str, scratch: Path) -> tuple[float, int] | None:
    """OpenCEP's (seconds, matches) on the file, or None when it does not finish in time."""
    out = scratch / f"opencep-{pattern}.json"
    start = time.perf_counter()
    try:
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "opencep_stocks.py"),
                        os.environ["OPENCEP_SRC"], pattern, str(events), str(out)],
                       check=True, capture_output=True, timeout=OPENCEP_LIMIT)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start, len(json.loads(out.read_text())["matches"])


def bar_file(rows: int, scratch: Path) -> Path:
    """The bar file of `rows` rows, kept in CEPPLAN_BENCH_BARS_DIR (reused when there) or in
    the scratch directory."""
    folder = Path(os.environ.get("CEPPLAN_BENCH_BARS_DIR") or scratch)
    path = folder / f"bars-{rows}.csv"
    if not path.is_file():
        write_bars(path, rows)
    return path


def bars(sizes: list[int], peer_sizes: list[int], scratch: Path) -> None:
    print(f"\n1. minute bars, Spark engine (local[*]); load: {uptime()}")
    print(f"{'pattern':<8} {'rows':>11} {'plan':>12} {'cepplan s':>10} {'/bare scan':>11} "
          f"{'matches':>11} {'rows/s':>10}  stages (s)")
    plans = (False, True) if os.environ.get("CEPPLAN_BENCH_SHUFFLE") else (False,)
    throughput: dict[str, float] = {}
    for rows in sizes:
        events = bar_file(rows, scratch)
        empty, scan = spark_seconds(EMPTY_JOB).wall, spark_seconds(BARE_SCAN, str(events)).wall
        print(f"floor at {rows:,} rows: empty Spark job {empty:.1f} s, bare read + count per "
              f"ticker (Spark's CSV reader) {scan:.1f} s (cepplan's JVM settings)", flush=True)
        for pattern in PATTERNS:
            workload = scratch / f"{pattern}.json"
            write_workload(workload, [pattern])
            for shuffle in plans:
                done, metrics = spark_run(workload, events, scratch / f"out-{pattern}-{rows}",
                                          shuffle=shuffle)
                took = done.wall
                shutil.rmtree(scratch / f"out-{pattern}-{rows}", ignore_errors=True)
                found, stages = metrics["matches"][pattern], metrics["seconds"]
                print(f"{pattern:<8} {rows:>11,} {metrics['spark_plan']:>12} {took:>10.1f} "
                      f"{took / scan:>11.2f} {found:>11,} {rows / took:>10,.0f}  "
                      f"{', '.join(f'{k} {v:.1f}' for k, v in stages.items())}", flush=True)
                if not shuffle:
                    throughput[pattern] = rows / took
    if not os.environ.get("OPENCEP_SRC"):
        print("\n2. OpenCEP: skipped (set OPENCEP_SRC to an OpenCEP checkout to compare)")
        return
    for peer_rows in peer_sizes:
        print(f"\n2. OpenCEP at {peer_rows:,} rows (limit {OPENCEP_LIMIT} s) vs cepplan Spark "
              f"at {sizes[-1]:,} rows; load: {uptime()}")
        events = bar_file(peer_rows, scratch)
        for pattern in PATTERNS:
            measured = opencep(events, pattern, scratch)
            if measured is None:
                print(f"{pattern:<8} OpenCEP did not finish in {OPENCEP_LIMIT} s")
                continue
            seconds, found = measured
            workload = scratch / f"{pattern}.json"
            _, metrics = spark_run(workload, events, scratch / f"out-oc-{pattern}")
            same = "equal" if metrics["matches"][pattern] == found else "DIFFERENT"
            peer = peer_rows / seconds
            print(f"{pattern:<8} OpenCEP {seconds:>7.1f} s, {peer:>9,.0f} rows/s, {found:,} "
                  f"matches (cepplan: {metrics['matches'][pattern]:,}, {same}); cepplan at "
                  f"{sizes[-1]:,} / OpenCEP throughput {throughput[pattern] / peer:.1f}x "
                  f"(target >= 20x)", flush=True)


def fraud(duration: int, scratch: Path) -> None:
    example = ROOT / "examples" / "fraud" / "workload.json"
    events, plan = scratch / "fraud.csv", scratch / "fraud-plan.json"
    rates = [f"--rate={t}={r}" for t, r in load_workload(example).statistics.rates.items()]
    subprocess.run([*CLI, "synth", str(example), "-o", str(events), "--duration", str(duration),
                    "--seed", "7", "--truth-draws", "20000", "--range", "amount=0:1500", *rates,
                    "-q"], check=True)
    subprocess.run([*CLI, "optimize", str(example), "--stats",
                    str(scratch / "fraud.truth.json"), "-o", str(plan), "--engine", "spark",
                    "--quiet"], check=True)
    print(f"\n3. fraud example on Spark, {duration:,} min of events; load: {uptime()}")
    walls: dict[str, list[float]] = {"trivial": [], "optimised": []}
    cpus: dict[str, list[float]] = {"trivial": [], "optimised": []}
    found: dict[str, dict] = {}
    found_all: dict[str, list[dict]] = {"trivial": [], "optimised": []}
    for kind in ("trivial", "optimised", "optimised", "trivial"):  # ABBA: drift cancels
        extra = ("--plan-kind", "trivial") if kind == "trivial" else ()
        done, found[kind] = spark_run(example, events, scratch / f"fraud-{kind}", plan=plan,
                                      extra=extra)
        found_all[kind].append(found[kind])
        walls[kind].append(done.wall)
        cpus[kind].append(done.cpu)
    print(f"wall seconds, in run order T O O T: {walls['trivial'][0]:.1f} "
          f"{walls['optimised'][0]:.1f} {walls['optimised'][1]:.1f} {walls['trivial'][1]:.1f}; "
          f"CPU seconds (the run's processes): {cpus['trivial'][0]:.1f} "
          f"{cpus['optimised'][0]:.1f} {cpus['optimised'][1]:.1f} {cpus['trivial'][1]:.1f}; "
          f"load after: {uptime()}")
    wall_t, wall_o = sum(walls["trivial"]) / 2, sum(walls["optimised"]) / 2
    cpu_t, cpu_o = sum(cpus["trivial"]) / 2, sum(cpus["optimised"]) / 2
    tasks = {k: sum(r["task_seconds"]["task CPU"] for r in found_all[k]) / 2
             for k in found_all if all("task_seconds" in r for r in found_all[k])}
    trivial, opt = found["trivial"], found["optimised"]
    assert opt["matches"] == trivial["matches"], "plans must not change results"
    chosen = json.loads(plan.read_text())["patterns"].values()
    predicted = (sum(p["detection"]["expected_cost"] for p in chosen)
                 / sum(p["naive_cost"] for p in chosen))
    good = opt["rows_read"] - sum(opt["rows_rejected"].values())
    rows_t, rows_o = trivial["rows_to_matchers"], opt["rows_to_matchers"]
    print(f"rows read {opt['rows_read']:,}; matches (equal under both plans) {opt['matches']}; "
          f"Spark plan {opt['spark_plan']}")
    for kind in ("trivial", "optimised"):  # the step costs are measured from these
        if "task_seconds" in found[kind]:
            print(f"{kind} plan, seconds in the tasks: {found[kind]['task_seconds']}; rows to "
                  f"matchers by pattern {found[kind]['rows_to_matchers_by_pattern']}")
    print(f"{'':<26} {'trivial':>12} {'optimised':>12} {'ratio':>8}")
    print(f"{'mean wall seconds':<26} {wall_t:>12.1f} {wall_o:>12.1f} {wall_o / wall_t:>8.3f}")
    print(f"{'mean CPU s (all processes)':<26} {cpu_t:>12.1f} {cpu_o:>12.1f} "
          f"{cpu_o / cpu_t:>8.3f}")
    if len(tasks) == 2:  # the range-local tasks' CPU: the workers are not waited for
        print(f"{'mean CPU s in the tasks':<26} {tasks['trivial']:>12.1f} "
              f"{tasks['optimised']:>12.1f} {tasks['optimised'] / tasks['trivial']:>8.3f}")
    print(f"{'rows to matchers':<26} {rows_t:>12,} {rows_o:>12,} {rows_o / rows_t:>8.3f}")
    print(f"{'transmission (of good rows)':<26} {rows_t / good:>12.3f} {rows_o / good:>12.3f}")
    print(f"{'planner predicted ratio':<26} {'':>12} {'':>12} {predicted:>8.3f}")
    print(f"measured/predicted ratio {rows_o / rows_t / predicted:.3f} (target within 10 %)")
    steps = json.loads(plan.read_text())["provenance"]["engine_steps"]
    minutes = steps["duration"] or duration
    saved = sum(s for s in steps["seconds_saved_per_time_unit"].values() if s > 0) * minutes
    print(f"planner (--engine spark): multi-step plans predicted to save {saved:.1f} s of "
          f"matching for a fixed {ENGINE_COSTS['spark'].run:.1f} s per run; measured "
          f"{wall_t - wall_o:.1f} s; sent back to one step: {steps['one_step'] or 'none'}")


def cpu(sizes: list[int], scratch: Path) -> None:
    """The GOOG pattern's bars in-process and on Spark: CPU seconds of every process of each
    run, their ratio, the empty Spark job's CPU beside, and the Spark run's stages."""
    workload, plan = scratch / "cpu-goog.json", scratch / "cpu-goog.plan.json"
    write_workload(workload, ["goog"])
    plan.write_text(json.dumps(trivial_plan(load_workload(workload)).to_json()))
    print(f"\n4. CPU seconds of all processes (cepplan, the JVM, Python workers), in-process "
          f"vs Spark (local[*]) on the same rows; load: {uptime()}")
    print(f"{'rows':>11} {'in-process':>19} {'Spark':>19} {'CPU ratio':>10} "
          f"{'empty Spark job':>19} {'ratio less empty job':>21}")
    for rows in sizes:
        events = bar_file(rows, scratch)
        empty = spark_seconds(EMPTY_JOB)
        local, local_metrics = spark_run(workload, events, scratch / "cpu-local", plan=plan,
                                         engine="local")
        spark, spark_metrics = spark_run(workload, events, scratch / "cpu-spark", plan=plan)
        same = _sorted_lines(scratch / "cpu-local") == _sorted_lines(scratch / "cpu-spark")
        for out in ("cpu-local", "cpu-spark"):
            shutil.rmtree(scratch / out)
        print(f"{rows:>11,} {local.cpu:>7.1f} s CPU {local.wall:>5.1f} s "
              f"{spark.cpu:>7.1f} s CPU {spark.wall:>5.1f} s {spark.cpu / local.cpu:>9.2f}x "
              f"{empty.cpu:>7.1f} s CPU {empty.wall:>5.1f} s "
              f"{(spark.cpu - empty.cpu) / local.cpu:>20.2f}x  (target <= 1.5x)", flush=True)
        tasks = spark_metrics.get("task_seconds", {})
        print(f"{'':>11} matches {local_metrics['matches']['goog']:,} in-process, "
              f"{spark_metrics['matches']['goog']:,} on Spark "
              f"({'the same lines' if same else 'DIFFERENT lines'}); Spark plan "
              f"{spark_metrics['spark_plan']}; in its tasks: "
              f"{', '.join(f'{k} {v:.1f} s' for k, v in tasks.items())}; load: {uptime()}",
              flush=True)


def _sorted_lines(out: Path) -> list[bytes]:
    """A run's match lines in sorted order (the engines write them in different parts)."""
    return sorted(line for part in sorted((out / "matches").iterdir())
                  for line in part.read_bytes().splitlines())


def main(quick: bool = False) -> None:
    """Quick: 10^4/10^5 bars, OpenCEP at 10^4, 2,000 min of fraud; full: 3·10^5 and 10^7
    bars, OpenCEP at 10^5, fraud at about 10^7 events (1.27M minutes at 7.9 events/min),
    the CPU comparison at 10^6 (quick) or 10^7 bars (CEPPLAN_BENCH_CPU_ROWS sets them).
    CEPPLAN_BENCH_SPARK=bars|fraud|cpu runs one part only; CEPPLAN_BENCH_SPARK_ROWS and
    CEPPLAN_BENCH_PEER_ROWS (comma-separated row counts) set cepplan's and OpenCEP's sizes
    (the OpenCEP comparison: CEPPLAN_BENCH_SPARK=bars CEPPLAN_BENCH_SPARK_ROWS=10000000
    CEPPLAN_BENCH_PEER_ROWS=100000,1000000); CEPPLAN_BENCH_PATTERNS=goog|msft runs one pattern;
    CEPPLAN_BENCH_BARS_DIR keeps the bar files for the next run; CEPPLAN_FRAUD_MINUTES sets
    the fraud size; CEPPLAN_BENCH_SHUFFLE=1 also runs each bar pattern with the shuffle plan
    (CEPPLAN_SPARK_RANGES=0) beside the range-local one."""
    part = os.environ.get("CEPPLAN_BENCH_SPARK", "")
    with tempfile.TemporaryDirectory(prefix="cepplan-bench-spark-") as scratch:
        where = Path(scratch)
        if part in ("", "bars"):
            bars(_sizes("CEPPLAN_BENCH_SPARK_ROWS", "10000,100000" if quick else
                        "300000,10000000"),
                 _sizes("CEPPLAN_BENCH_PEER_ROWS", "10000" if quick else "100000"), where)
        if part in ("", "fraud"):
            fraud(int(os.environ.get("CEPPLAN_FRAUD_MINUTES", 2_000 if quick else 1_270_000)),
                  where)
        if part in ("", "cpu"):
            cpu(_sizes("CEPPLAN_BENCH_CPU_ROWS", "1000000" if quick else "10000000"), where)


def _sizes(variable: str, default: str) -> list[int]:
    return [int(float(n)) for n in os.environ.get(variable, default).split(",") if n.strip()]
