"""Planner benchmarks (seed 002 §6): DP time by size, heuristics vs DP, transmission factors.

    python -m benchmarks planner [--quick]

1. DP time for n = 8, 10, 12, 14 subevents of an AND (and SEQ up to 12), random rates
   (targets: n = 12 under 2 s, n = 14 under 30 s).
2. Heuristic cost / DP cost for the cheapest plan within a random latency bound, random
   AND/SEQ of 4-8 subevents (target: mean <= 1.05).
3. Transmission factor (§6.1) of the chosen plans vs the naive plan vs the minimum, measured
   by the plan simulator on synthetic Zipf-rated streams (skew 0.255, §6.1).
4. What the invariants pass costs: `optimize` of each bundled example in-process with the
   default settings (tabu search), without and with the pass, the least of 3 runs (2 with
   --quick); the command line adds its start-up to both.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np

from cepplan.costmodels.occurrence import poisson
from cepplan.costmodels.operators import AND, SEQ, OperandModel, PatternModel
from cepplan.planner import dp, heuristics
from cepplan.planner.candidates import Option, cheapest_within
from cepplan.planner.compose import Settings
from cepplan.planner.evaluation import EvaluationSettings
from cepplan.planner.optimize import optimize
from cepplan.planner.simulator import simulate
from cepplan.stats.synth import synthesize
from cepplan.workload import load_workload
from cepplan.workload.loader import build_workload

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _model(rng: random.Random, operator: str, n: int) -> tuple[PatternModel, dict]:
    rates = [rng.uniform(0.05, 2.0) for _ in range(n)]
    operands = tuple(OperandModel(f"e{i}", poisson(r), i) for i, r in enumerate(rates))
    model = PatternModel(operator, rng.uniform(0.5, 2.0), operands)
    return model, {o.var: [Option(o.occurrence.rate, 1)] for o in operands}


def dp_times(quick: bool) -> None:
    print("DP time (Algorithm 1), random rates:")
    sizes = {AND: [8, 10, 12] if quick else [8, 10, 12, 14], SEQ: [8, 10] if quick else [8, 10, 12]}
    for operator, ns in sizes.items():
        for n in ns:
            model, options = _model(random.Random(n), operator, n)
            start = time.perf_counter()
            front = dp.solve(model, options)
            seconds = time.perf_counter() - start
            target = {12: " (target < 2 s)", 14: " (target < 30 s)"}.get(n, "")
            print(f"  {operator:3} n={n:2}  {seconds:7.2f} s  front: {len(front)} plans{target}")


def heuristic_ratio(quick: bool) -> None:
    rng = random.Random(42)
    ratios = []
    for _ in range(40 if quick else 200):
        operator, n = rng.choice([AND, SEQ]), rng.randint(4, 8)
        model, options = _model(rng, operator, n)
        bound = rng.randint(1, n)
        exact = cheapest_within(dp.solve(model, options), bound)
        approx = cheapest_within(heuristics.solve(model, options, bound), bound)
        ratios.append(approx.cost / exact.cost)
    ratios = np.array(ratios)
    print(f"heuristic / DP cost within a random latency bound, {len(ratios)} random AND/SEQ "
          f"of 4-8: mean {ratios.mean():.4f}, max {ratios.max():.4f}, "
          f"optimal in {np.mean(ratios < 1 + 1e-9):.0%} (target mean <= 1.05)")


def transmission_factors(quick: bool) -> None:
    types = [f"T{i}" for i in range(10)]
    rng = random.Random(7)
    patterns = []
    for index in range(6):
        operator = "AND" if index % 2 == 0 else "SEQ"
        chosen = rng.sample(types, 3)
        patterns.append({"name": f"p{index}", "within": 1.0, "latency": {"max_steps": 3},
                         "structure": [operator, *[f"v{i}:{t}" for i, t in enumerate(chosen)]]})
    raw = {"format": "cepplan.workload/1", "time_unit": "s",
           "event_types": {t: {"attributes": {"x": "double"}} for t in types},
           "patterns": patterns}
    workload = build_workload(raw)
    duration = 5_000 if quick else 50_000
    synth = synthesize(workload, duration=duration, seed=1, total_rate=3.0)
    raw["statistics"] = {"rates": synth.truth["rates"]}
    workload = build_workload(raw)
    plan = optimize(workload, workload.statistics, Settings()).plan
    print(f"transmission factor on Zipf streams (skew 0.255, total 3 events/s, W = 1 s, "
          f"{duration} s):")
    print("  pattern  chosen plan            chosen   naive  minimum  predicted/simulated")
    for pattern in workload.patterns:
        chosen = plan.patterns[pattern.name].detection
        run = simulate(synth.events, pattern, chosen.steps)
        naive = simulate(synth.events, pattern, (frozenset(pattern.variables),))
        predicted = chosen.expected_cost * duration
        text = " -> ".join(",".join(sorted(s)) for s in chosen.steps)
        print(f"  {pattern.name:7}  {pattern.operator} {text:18} {run.transmission_factor:7.3f} "
              f"{naive.transmission_factor:7.3f} {run.minimum_transmission_factor:8.4f} "
              f"{predicted / max(run.transmitted, 1):10.3f}")


def invariants_cost(quick: bool) -> None:
    print("Invariants pass: optimize of each example without and with it (least of "
          f"{2 if quick else 3} runs):")
    print(f"{'example':<14} {'patterns':>8} {'without':>9} {'with':>9} {'overhead':>9}")
    for folder in sorted(p for p in EXAMPLES.iterdir() if (p / "workload.json").is_file()):
        workload = load_workload(folder / "workload.json")
        seconds = {}
        for invariants in (False, True):
            runs = []
            for _ in range(2 if quick else 3):
                start = time.perf_counter()
                optimize(workload, workload.statistics, Settings(),
                         evaluation_settings=EvaluationSettings(), invariants=invariants)
                runs.append(time.perf_counter() - start)
            seconds[invariants] = min(runs)
        print(f"{folder.name:<14} {len(workload.patterns):>8} {seconds[False]:>8.2f}s "
              f"{seconds[True]:>8.2f}s {seconds[True] - seconds[False]:>+8.2f}s")


def main(quick: bool) -> None:
    """Print the four measurements side by side."""
    dp_times(quick)
    heuristic_ratio(quick)
    transmission_factors(quick)
    invariants_cost(quick)
