"""Covering selections (seed 000 §5): CP-SAT against the MQC and MNH heuristics.

1. Processed selections relative to no reuse for QoR thresholds 0.5-0.95 and interest sizes
   (the Fig. 8(a) setting: mobile cars, 25 consumers, 10 s batches): per batch, CP-SAT never
   more than either heuristic; how often and by how much it is strictly better.
2. Measured QoR per threshold (Fig. 8(b) shape): never below the threshold.
3. Solve time per batch against batch size up to 10,000 selections (§5.4 basic setup: evenly
   spread events, interests a quarter of the area): where CP-SAT stops being worth it, and
   whether `auto` picks right.
4. Throughput with reuse against without as the operator's complexity grows (Fig. 8(h) shape).

    python -m benchmarks covering [--quick]
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pandas as pd

from cepplan.costmodels.interests import processing_neighbours
from cepplan.engine_adapter.runtime.covering import cover_inputs, deliver, groups
from cepplan.engine_adapter.runtime.covering_run import run_covering
from cepplan.planner.covering import (
    CPSAT_ENTRIES_PER_SECOND,
    instance,
    solve_auto,
    solve_cpsat,
    solve_mnh,
    solve_mqc,
)
from cepplan.stats.mobility import MobilitySpec, mobility_workload, simulate_cars
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
TIME_LIMIT = 10.0


def main(quick: bool = False) -> None:
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average); CP-SAT 1 worker, {TIME_LIMIT:g} s "
          "limit per batch")
    interests = (250.0, 500.0, 1000.0) if quick else (250.0, 500.0, 1000.0, 1500.0)
    reuse_by_threshold(interests, duration=60.0 if quick else 120.0)
    sizes = (100, 1000, 3000) if quick else (100, 300, 1000, 3000, 10_000)
    solve_time_by_batch_size(sizes)
    complexities = (1, 10, 100) if quick else (1, 10, 100, 1000)
    throughput_by_complexity(complexities, quick)


def canonical(events: pd.DataFrame) -> pd.DataFrame:
    return events.assign(**{EVENT_TYPE: events["kind"], EVENT_TS: events["t"],
                            EVENT_ID: np.arange(len(events))})


def section_for(workload: dict[str, Any], threshold: float) -> dict[str, Any]:
    """A plan's covering section for the generated workload at one QoR threshold (neighbours:
    re-chosen per batch from k, since the interests move)."""
    consumers = workload["consumers"]
    queries = [dict(q, qor={"precision": threshold, "recall": threshold})
               for q in consumers["queries"]]
    return {"solver": "cpsat", "time_limit": TIME_LIMIT, "batch": consumers["batch"],
            "neighbors": consumers["neighbors"], "operators": consumers["operators"],
            "queries": queries}


def reuse_by_threshold(interests: tuple[float, ...], duration: float) -> None:
    print("\n1-2. processed selections relative to no reuse (Fig. 8(a) setting: 100 cars, "
          "25 consumers, 2 s time windows, 10 s batches), and measured QoR (Fig. 8(b))")
    print(f"{'interest':>8} {'thr':>5} {'sel':>6} {'cpsat':>6} {'mqc':>6} {'mnh':>6} "
          f"{'batches':>7} {'<mqc':>5} {'<mnh':>5} {'>any':>5} {'meanP':>6} {'meanR':>6} "
          f"{'minP':>5} {'minR':>5} {'viol':>4}")
    totals = {"batches": 0, "better_mqc": 0, "better_mnh": 0, "worse": 0, "saved_vs_mqc": 0,
              "saved_vs_mnh": 0}
    for side in interests:
        spec = MobilitySpec(cars=100, consumers=25, interest=side, duration=duration)
        sim = simulate_cars(spec, seed=7)
        events = canonical(sim.events)
        workload = mobility_workload(sim, spec)
        for threshold in THRESHOLDS:
            section = section_for(workload, threshold)
            counts = {"cpsat": 0, "mqc": 0, "mnh": 0}
            selections, better_mqc, better_mnh, worse = 0, 0, 0, 0
            frames = []
            for group in groups(events, section):
                serves, owner, priority = cover_inputs(group, section)
                inst = instance(serves, owner, priority=priority)
                exact, greedy, neighbour = solve_cpsat(inst, TIME_LIMIT), solve_mqc(inst), \
                    solve_mnh(inst)
                selections += inst.size
                counts["cpsat"] += len(exact.chosen)
                counts["mqc"] += len(greedy.chosen)
                counts["mnh"] += len(neighbour.chosen)
                better_mqc += len(exact.chosen) < len(greedy.chosen)
                better_mnh += len(exact.chosen) < len(neighbour.chosen)
                worse += len(exact.chosen) > min(len(greedy.chosen), len(neighbour.chosen))
                totals["batches"] += 1
                totals["saved_vs_mqc"] += len(greedy.chosen) - len(exact.chosen)
                totals["saved_vs_mnh"] += len(neighbour.chosen) - len(exact.chosen)
                frames.append(deliver(group, exact.assignment, section))
            totals["better_mqc"] += better_mqc
            totals["better_mnh"] += better_mnh
            totals["worse"] += worse
            results = pd.concat(frames, ignore_index=True)
            violations = int((~results["meets_thresholds"]).sum())
            print(f"{side:8.0f} {threshold:5.2f} {selections:6d} "
                  f"{counts['cpsat'] / selections:6.3f} {counts['mqc'] / selections:6.3f} "
                  f"{counts['mnh'] / selections:6.3f} {len(frames):7d} {better_mqc:5d} "
                  f"{better_mnh:5d} {worse:5d} {results['precision'].mean():6.3f} "
                  f"{results['recall'].mean():6.3f} {results['precision'].min():5.2f} "
                  f"{results['recall'].min():5.2f} {violations:4d}", flush=True)
    print(f"over {totals['batches']} batch instances: CP-SAT used more covering selections "
          f"than a heuristic on {totals['worse']}; fewer than MQC on {totals['better_mqc']} "
          f"({totals['saved_vs_mqc']} selections saved in all), fewer than MNH on "
          f"{totals['better_mnh']} ({totals['saved_vs_mnh']} saved)")


def basic_setup(n_queries: int, windows: int, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """Evenly spread events over a unit-less 1000 x 1000 area, `n_queries` queries with
    interests a quarter of the area at random places, `windows` 1 s time windows per batch and
    about 30 events per window (seed 000 §5.4)."""
    rng = np.random.default_rng(seed)
    side, interest = 1000.0, 500.0
    per_window = 30 * side * side / (interest * interest)
    n = rng.poisson(per_window * windows)
    events = pd.DataFrame({EVENT_TYPE: "Value", EVENT_TS: np.sort(rng.uniform(0, windows, n)),
                           EVENT_ID: np.arange(n), "v": rng.uniform(0, 100, n),
                           "x": rng.uniform(0, side, n), "y": rng.uniform(0, side, n)})
    # queries cluster on a few focal points, as cars queue on a road: overlaps are high
    hubs = rng.uniform(interest / 2, side - interest / 2, size=(max(1, n_queries // 20), 2))
    centres = hubs[rng.integers(len(hubs), size=n_queries)] + rng.normal(0, 15, (n_queries, 2))
    queries = [{"id": f"q{i}", "operator": "avg", "region": [cx - interest / 2,
                                                           cy - interest / 2,
                                                           cx + interest / 2,
                                                           cy + interest / 2],
                "window": {"time": 1.0}, "qor": {"precision": 0.8, "recall": 0.8}}
               for i, (cx, cy) in enumerate(centres)]
    section = {"batch": {"time": float(windows)}, "time_limit": TIME_LIMIT,
               "operators": {"avg": {"event_type": "Value", "aggregate": "avg",
                                     "attribute": "v", "x": "x", "y": "y"}},
               "queries": queries}
    for query, near in zip(queries, processing_neighbours(queries, 0.0, 8, None), strict=True):
        query["neighbors"] = [queries[m]["id"] for m in near]
    return events, section


def solve_time_by_batch_size(sizes: tuple[int, ...]) -> None:
    print(f"\n3. solve time per batch against batch size (basic setup; auto takes CP-SAT up to "
          f"{CPSAT_ENTRIES_PER_SECOND} reuse pairs per second of limit)")
    print(f"{'selections':>10} {'pairs':>7} {'cpsat':>6} {'status':>8} {'gap':>6} {'t_cpsat':>8} "
          f"{'mqc':>6} {'t_mqc':>7} {'mnh':>6} {'t_mnh':>7} {'auto':>6} {'t_auto':>7} "
          f"{'right':>5}")
    for size in sizes:
        n_queries = max(10, size // 10)
        events, section = basic_setup(n_queries, 10)
        group = groups(events, section)[0]
        serves, owner, priority = cover_inputs(group, section)
        inst = instance(serves, owner, priority=priority)
        exact = solve_cpsat(inst, TIME_LIMIT)
        greedy, neighbour = solve_mqc(inst), solve_mnh(inst)
        auto = solve_auto(inst, TIME_LIMIT)
        print(f"{inst.size:10d} {inst.entries:7d} {len(exact.chosen):6d} {exact.status:>8} "
              f"{exact.gap or 0:6.3f} {exact.seconds:8.2f} {len(greedy.chosen):6d} "
              f"{greedy.seconds:7.3f} {len(neighbour.chosen):6d} {neighbour.seconds:7.3f} "
              f"{auto.solver:>6} {auto.seconds:7.2f} {_auto_right(auto, exact, greedy)!s:>5}",
              flush=True)


def _auto_right(auto, exact, greedy) -> bool:
    """`auto` chose right when it took CP-SAT where CP-SAT returned a cover no worse than MQC's
    within the limit (10% slack), and MQC where CP-SAT overran the limit or found nothing."""
    in_time = exact.status != "fallback" and exact.seconds <= 1.1 * TIME_LIMIT
    return (auto.solver == "cpsat") == in_time


def throughput_by_complexity(complexities: tuple[int, ...], quick: bool) -> None:
    print("\n4. throughput with reuse against without as operator complexity grows "
          "(Fig. 8(h) shape; complexity = times the average is computed per execution; the "
          "reuse runs include building selections, reuse pairs, the cover and measuring QoR)")
    events, section = basic_setup(100 if quick else 200, 10, seed=1)
    section["time_limit"] = 1.0
    print(f"{'complexity':>10} {'events':>7} {'ev/s none':>10} {'ev/s mqc':>9} "
          f"{'ev/s cpsat1s':>12} {'mqc/none':>8} {'cpsat/none':>10} {'executions':>17}")
    for complexity in complexities:
        seconds, runs = {}, {}
        for solver in ("none", "mqc", "cpsat"):
            start = time.perf_counter()
            runs[solver] = run_covering(events, section, complexity=complexity, solver=solver)
            seconds[solver] = time.perf_counter() - start
        n = len(events)
        executed = "/".join(str(runs[s].metrics["executions_with_reuse"])
                            for s in ("cpsat", "mqc", "none"))
        print(f"{complexity:10d} {n:7d} {n / seconds['none']:10.0f} {n / seconds['mqc']:9.0f} "
              f"{n / seconds['cpsat']:12.0f} {seconds['none'] / seconds['mqc']:8.2f} "
              f"{seconds['none'] / seconds['cpsat']:10.2f} {executed:>17}", flush=True)
