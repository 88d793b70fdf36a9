"""Keyed workloads (docs/planner.md, "Keyed workloads"): the chosen plan against every
alternative, run by the in-process engine, and the model's predictions against the engine's
metrics.

    python -m benchmarks keyed [--quick]

For the per-user clickstream (4,500 users, SEQ(v:PageView, c:AddToCart, p:Purchase) per user
within 30 min, product ids equal) and random keyed workloads (10-10^5 keys, uniform and Zipf):
`cepplan stats` and `cepplan optimize` as a user runs them, then every Pareto plan and every
order of one-event steps run; printed per workload: the chosen plan's rows to matchers over
the best run's (target <= 1.1), its wall time over the best's (each the least of five
interleaved runs for the chosen plan and the plans near the fastest), and predicted over measured
rows to matchers and partial matches per window (target: within 10 % median, 25 % worst).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from benchmarks.keyed_workloads import (
    Case,
    brute_force,
    clickstream_case,
    plan_case,
    random_case,
    summary,
)
from cepplan.engine_adapter.runtime.memory import MatchMemoryError

RANDOM_CASES, QUICK_RANDOM_CASES = 20, 4


def _row(case: Case, figures: dict) -> str:
    return (f"{case.name:<14} {figures['rows']:>9,} {figures['best_rows']:>9,} "
            f"{figures['rows_ratio']:>6.2f} {figures['seconds_ratio']:>6.2f} "
            f"{figures['cpu_ratio']:>6.2f} "
            f"{1 + figures['rows_error']:>7.2f} {1 + figures['partial_error']:>7.2f}  "
            f"{figures['chosen']:<12} {figures['best']:<12} {case.description}")


def main(quick: bool) -> None:
    header = (f"{'workload':<14} {'rows':>9} {'best':>9} {'ratio':>6} {'time':>6} {'cpu':>6} "
              f"{'pred/m':>7} {'pm p/m':>7}  {'chosen':<12} {'best plan':<12} description")
    print("rows: the chosen plan's rows to matchers; best: fewest over every Pareto plan and "
          "every order of one-event steps;\nratio/time/cpu: chosen over best (rows, wall, CPU "
          "seconds); pred/m: predicted over measured rows to matchers; pm p/m: the same for "
          "partial matches per window")
    print(header)
    results = []
    with tempfile.TemporaryDirectory(prefix="cepplan-bench-keyed-") as scratch:
        root = Path(scratch)
        cases = [lambda: clickstream_case(root / "clickstream", users=1500 if quick else 4500)]
        count = QUICK_RANDOM_CASES if quick else RANDOM_CASES
        cases += [lambda s=s: random_case(root / f"random-{s}", s,
                                          events=20_000 if quick else 60_000)
                  for s in range(1, count + 1)]
        for make in cases:
            case = make()
            plan_case(case)
            try:
                chosen, others = brute_force(case)
            except MatchMemoryError as refused:
                print(f"{case.name:<14} not run: {refused} ({case.description})", flush=True)
                continue
            figures = summary(chosen, others)
            results.append(figures)
            print(_row(case, figures), flush=True)
    _closing(results)


def _closing(results: list[dict]) -> None:
    ratios = [r["rows_ratio"] for r in results]
    errors = [abs(r[k]) for r in results for k in ("rows_error", "partial_error")
              if r[k] == r[k]]
    within = sum(r <= 1.1 for r in ratios)
    print(f"rows to matchers <= 1.1x best: {within}/{len(ratios)} "
          f"(median {statistics.median(ratios):.2f}, worst {max(ratios):.2f})")
    for key, what in (("seconds_ratio", "wall time"), ("cpu_ratio", "CPU time")):
        values = [r[key] for r in results]
        print(f"{what} <= 1.1x best: {sum(v <= 1.1 for v in values)}/{len(values)} "
              f"(median {statistics.median(values):.2f}, worst {max(values):.2f})")
    if errors:
        print(f"|predicted/measured - 1| over rows and partial matches: median "
              f"{statistics.median(errors):.1%}, worst {max(errors):.1%}")
