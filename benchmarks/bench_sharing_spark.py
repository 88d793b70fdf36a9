"""The shared plan on the Spark engine (seed 004 §6): the trading-rules example and 60
patterns on one common prefix, each under the chosen plan with its shared subtrees, the same
plan unshared, and the trivial plan, side by side in one local[2] SparkSession (after a
warm-up run), rounds interleaved, best per plan; matches checked identical across plans.
Wall = `run_job` (read, tag, match, write; no JVM start); matching = its
`seconds["match and write"]` (range-local: the whole job, read and tag included); the Spark
plan that ran (`metrics.json`'s `spark_plan`: range-local for one time-ordered CSV file, else
shuffle) is printed per plan.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

from benchmarks.bench_sharing_engine import (
    _common_prefix_workload,
    _synthetic_events,
    best_runs,
)
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.workload.loader import build_workload, load_workload

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "trading_rules"
RUNS = ("trivial", "chosen unshared", "chosen shared")


def main(quick: bool = False) -> None:
    from pyspark.sql import SparkSession

    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    spark = (SparkSession.builder.master("local[2]").appName("cepplan sharing benchmark")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    limit, repeats = (2.0, 1) if quick else (10.0, 2)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            events = Path(tmp) / "trading.csv"
            csv = pd.read_csv(EXAMPLE / "events.csv")
            csv[csv["ts"] < (150.0 if quick else 600.0)].to_csv(events, index=False)
            wl = load_workload(EXAMPLE / "workload.json")
            jobs = _jobs(wl, limit)
            run_job(spark, jobs["trivial"], [str(events)], str(Path(tmp) / "warm"),
                    say=lambda _: None)  # JVM, Python workers, code generation
            _compare("examples/trading_rules", spark, jobs, events, Path(tmp), repeats)
            # seed 004's favourable case, where sharing pays on the local engine
            wl = build_workload(_common_prefix_workload(30 if quick else 60))
            events = _synthetic_events(wl, Path(tmp), seconds=20.0 if quick else 60.0)
            _compare(f"{len(wl.patterns)} patterns on one common prefix", spark,
                     _jobs(wl, limit), events, Path(tmp), repeats)
    finally:
        spark.stop()


def _jobs(wl, limit: float) -> dict[str, dict]:
    """Job data of the trivial plan, the searched plan, and that plan without sharing."""
    chosen = evaluation(wl, wl.statistics, trivial_plan(wl),
                        EvaluationSettings("tabu", "edge", limit, seed=1))
    jobs = {"trivial": job_data(wl, trivial_plan(wl)), "chosen shared": job_data(wl, chosen)}
    jobs["chosen unshared"] = {k: v for k, v in jobs["chosen shared"].items() if k != "sharing"}
    return jobs


def _matching_seconds(metrics: dict) -> float:
    """The run's matching seconds: the shuffle plan's match and write stage, or the whole
    range-local job (its tasks read, tag and match together)."""
    seconds = metrics["seconds"]
    return seconds.get("match and write", seconds.get("read, tag and match by range", 0.0))


def _compare(title: str, spark, jobs: dict, events: Path, tmp: Path, repeats: int) -> None:
    wall, matching, found, metrics = best_runs(
        RUNS, lambda name, out: run_job(spark, jobs[name], [str(events)], str(out),
                                        say=lambda _: None),
        _matching_seconds, tmp, repeats)
    same = all(found[n] == found["trivial"] for n in RUNS)
    total = sum(metrics["trivial"]["matches"].values())
    print(f"\n-- {title}, Spark local[2]: {metrics['trivial']['rows_read']} "
          f"events, {total} matches; identical across plans: {same}")
    print(f"{'plan':>16} {'wall s':>8} {'vs trivial':>10} {'matching s':>10} {'vs trivial':>10} "
          f"{'Spark plan':>12}")
    for name in RUNS:
        print(f"{name:>16} {wall[name]:>8.2f} {wall['trivial'] / wall[name]:>9.2f}x "
              f"{matching[name]:>10.2f} {matching['trivial'] / matching[name]:>9.2f}x "
              f"{metrics[name].get('spark_plan', '?'):>12}")
    nodes = metrics["chosen shared"].get("shared_nodes", [])
    print(f"shared nodes: {len(nodes)} with {sum(len(n['users']) for n in nodes)} users; "
          f"partial matches computed once: {sum(n['partial_matches'] for n in nodes)}")

