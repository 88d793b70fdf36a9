"""The evaluation search (seed 004 §6): modelled Cost_tree^multi of the chosen multitree vs
trivial, SH and RE on §6.1-like workloads, SA vs tabu, edge vs vertex neighbourhoods, cost vs
time, optimality on small workloads against brute force over every multitree, planning time
for 1,000 patterns, and the realised effect of the chosen join orders on the local engine.

    python -m benchmarks search [--quick]
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from pathlib import Path

import pandas as pd

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.search.baselines import (
    cost_floor,
    greedy_trees,
    reordered_trees,
    trivial_trees,
    unshared_cost,
)
from cepplan.search.graph import build_graph
from cepplan.search.local import (
    BUSHY,
    Compiled,
    Interner,
    best_tree,
    local_cost,
    pattern_order_tree,
)
from cepplan.search.multitree import Multitree, multi_cost
from cepplan.search.neighbourhood import Neighbourhood
from cepplan.search.problem import Problem, problem_from_workload
from cepplan.search.solve import search
from cepplan.search.synthetic import synthetic_workload
from cepplan.workload.loader import build_workload, load_workload
from cepplan.workload.model import KLEENE
from tests.search.helpers import all_trees, random_problem
from tests.search.test_search import reference_multi_cost

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "trading_rules"
LOG = "log-uniform"
COMBOS = (("sa", "edge"), ("sa", "vertex:4"), ("tabu", "edge"), ("tabu", "vertex:4"))


def main(quick: bool = False) -> None:
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    limit = 2.0 if quick else 10.0
    seeds = (1,) if quick else (1, 2)
    _bounds(seeds)
    for window in ("50ms", "100ms", "200ms", "1s", "900s"):
        _quality(window, limit, seeds)
    for window in ("100ms", "200ms", "500ms", "1s"):
        _quality(window, limit, seeds, spread=LOG)
    _exactness(20 if quick else 100)
    _planning_time(300 if quick else 1000)
    _realised(limit, seconds=100.0 if quick else 400.0)


def _problem(n: int, seed: int, window: str, spread: str = "uniform",
             pair_share: float | None = None) -> tuple[Problem, object]:
    raw = synthetic_workload(n, seed=seed, spread=spread, pair_share=pair_share)
    for pattern in raw["patterns"]:
        pattern["within"] = window
    wl = build_workload(raw)
    return problem_from_workload(wl, wl.statistics), wl


def _bounds(seeds: tuple[int, ...]) -> None:
    """How far any plan can get below trivial, without searching, as the two choices the
    seed leaves open vary: how rates and selectivities fill its ranges, and how many pairs
    get a comparison (seed 004 §6.1: about half the pattern size; issue 11: half the pairs).
    'start' is every pattern's cheapest tree with each type's leaf once (the search's
    start); 'bound' is trivial ÷ (complete matches + negation + one leaf per type)."""
    print("\n-- what any plan can reach, 100 patterns (no search): trivial ÷ start / bound; "
          "share of trivial's cost in complete matches --")
    windows = ("20ms", "50ms", "100ms", "200ms", "500ms", "1s", "10s")
    print(f"{'spread':>11} {'comparisons':>12} {'seed':>4} " +
          " ".join(f"{w:>17}" for w in windows))
    for spread in ("uniform", LOG):
        for pair_share, label in ((None, "size/2"), (0.5, "pairs/2")):
            for seed in seeds:
                cells = []
                for window in windows:
                    problem, _ = _problem(100, seed, window, spread, pair_share)
                    start, bound, roots = _reach(problem)
                    cells.append(f"{start:5.1f}/{bound:5.1f}x {100 * roots:3.0f}%")
                print(f"{spread:>11} {label:>12} {seed:>4} " + " ".join(f"{c:>17}" for c in cells))


def _reach(problem: Problem) -> tuple[float, float, float]:
    """trivial ÷ the search's start, trivial ÷ the bound, complete matches' share of trivial."""
    interner = Interner()
    compiled = [Compiled(p, interner) for p in problem.patterns]
    trivial = unshared_cost(compiled, trivial_trees(compiled))
    start = multi_cost(compiled, reordered_trees(compiled, BUSHY))
    roots, negation, leaves = cost_floor(compiled)
    return trivial / start, trivial / (roots + negation + leaves), (roots + negation) / trivial


def _degree(problem: Problem) -> str:
    """How much the workload can share: the MPG's density and patterns per subpattern."""
    interner = Interner()
    compiled = [Compiled(p, interner) for p in problem.patterns]
    graph = build_graph(compiled)
    owners = sorted(len(users) for users in graph.owners.values())
    n = len(compiled)
    greedy = unshared_cost(compiled, greedy_trees(compiled))
    best = unshared_cost(compiled, reordered_trees(compiled, BUSHY))
    return (f"MPG: {len(graph.edges)} edges (density {2 * len(graph.edges) / (n * (n - 1)):.2f}), "
            f"{len(owners)} maximal common subpatterns shared by {owners[len(owners) // 2]} "
            f"patterns (median), {owners[-1]} (most); RE as the seed builds it (greedy order) "
            f"costs {greedy / best:.3f}x the RE used here (each pattern's cheapest tree)")


def _quality(window: str, limit: float, seeds: tuple[int, ...], spread: str = "uniform") -> None:
    print(f"\n-- 100 patterns, avg size 5, window {window}, rates and selectivities {spread} "
          f"over the seed's ranges, time limit {limit:g} s --")
    print(f"{'seed':>4} {'search':>14} {'cost':>10} {'trivial/cost':>12} "
          f"{'below best SH/RE':>16} {'steps':>7} {'seconds':>7} {'shared':>6}")
    for seed in seeds:
        problem, _ = _problem(100, seed, window, spread)
        print(f"{'':>4} {_degree(problem)}")
        for algorithm, neighbourhood in COMBOS:
            r = search(problem, algorithm=algorithm, neighbourhood=neighbourhood,
                       time_limit=limit, seed=seed)
            if (algorithm, neighbourhood) == COMBOS[0]:
                leaves_shared = _fixed_share(problem, r.trivial_cost)
            best = min(r.sh_cost, r.re_cost)
            print(f"{seed:>4} {algorithm + '-' + neighbourhood:>14} {r.cost:>10.4g} "
                  f"{r.trivial_cost / r.cost:>11.1f}x {100 * (1 - r.cost / best):>15.1f}% "
                  f"{r.steps:>7} {r.seconds:>7.2f} {len(r.shared):>6}")
            if neighbourhood == "edge":
                curve = [f"{_at(r.trace, t):.4g}@{t:g}s" for t in
                         (0.1, 0.5, 1, 2, 5, 10) if t <= limit]
                print(f"{'':>4} {'':>14} trivial {r.trivial_cost:.4g}, SH {r.sh_cost:.4g}, "
                      f"RE {r.re_cost:.4g}, start (RE trees, leaves counted once) "
                      f"{r.trace[0][1]:.4g}; cost vs time: {', '.join(curve)}; trivial with "
                      f"each type's leaf once {leaves_shared:.4g} "
                      f"({leaves_shared / r.cost:.1f}x the chosen cost)")


def _fixed_share(problem: Problem, trivial: float) -> float:
    """Where trivial's cost lies, and the best trivial/cost any plan could reach: every plan
    keeps each distinct root (complete matches, seed 004 App. C counts them), the negation
    veto nodes and one copy of every distinct leaf (`cost_floor`). Returns trivial's cost
    with each type's leaf counted once (§5: a multitree shares all leaves of a type)."""
    interner = Interner()
    compiled = [Compiled(p, interner) for p in problem.patterns]
    roots = sum(c.cost[(1 << c.m) - 1] for c in compiled)
    negation = sum(c.pattern.negation_cost for c in compiled)
    leaves = sum(c.cost[1 << i] for c in compiled for i in range(c.m))
    distinct_roots, _, once = cost_floor(compiled)
    assert abs(sum(local_cost(c, pattern_order_tree(c.m)) for c in compiled) + negation
               - trivial) <= 1e-9 * trivial
    inner = trivial - roots - negation - leaves
    kleene = [c for c in compiled if any(json.loads(label.rsplit("#", 1)[0])[1] == KLEENE
                                         for label in c.labels)]
    kleene_cost = sum(local_cost(c, pattern_order_tree(c.m)) + c.pattern.negation_cost
                      for c in kleene)
    print(f"{'':>4} the {len(kleene)} patterns with a Kleene variable are "
          f"{100 * kleene_cost / trivial:.1f}% of trivial's cost")
    print(f"{'':>4} trivial's cost: complete matches {100 * roots / trivial:.1f}%, negation "
          f"{100 * negation / trivial:.1f}%, leaves {100 * leaves / trivial:.1f}% "
          f"(each type once: {100 * once / trivial:.1f}%), inner nodes "
          f"{100 * inner / trivial:.1f}%; no plan beats trivial by more than "
          f"{trivial / (distinct_roots + negation + once):.2f}x")
    return trivial - leaves + once


def _at(trace, seconds: float) -> float:
    return min(cost for t, cost in trace if t <= seconds) if any(
        t <= seconds for t, _ in trace) else trace[0][1]


def _exactness(instances: int) -> None:
    print(f"\n-- optimality: {instances} workloads of 3 patterns (3-4 events, 5 types) "
          "vs brute force over every multitree --")
    for algorithm in ("sa", "tabu"):
        optimal, worst, spent = 0, 0.0, 0.0
        for seed in range(instances):
            patterns = random_problem(random.Random(seed), 3, (3, 4), "ABCDE")
            options = [[_named(p, t) for t in all_trees(tuple(range(len(p.variables))))]
                       for p in patterns]
            optimum = min(reference_multi_cost(patterns, c) for c in itertools.product(*options))
            r = search(Problem(tuple(patterns)), algorithm=algorithm, seed=seed, time_limit=1.0,
                       patience=3000)
            spent += r.seconds
            optimal += r.cost <= optimum * (1 + 1e-9)
            worst = max(worst, r.cost / optimum - 1)
        print(f"{algorithm:>5}: optimal in {optimal}/{instances} "
              f"({100 * optimal / instances:.0f}%), worst excess {100 * worst:.2f}%, "
              f"mean search time {spent / instances:.3f} s (limit 1 s)")


def _named(pattern, tree):
    if isinstance(tree, tuple):
        return (_named(pattern, tree[0]), _named(pattern, tree[1]))
    return pattern.variables[tree]


def _planning_time(n: int) -> None:
    print(f"\n-- planning time, {n} patterns (window 100ms) --")
    problem, _ = _problem(n, 5, "100ms")
    start = time.perf_counter()
    interner = Interner()
    compiled = [Compiled(p, interner) for p in problem.patterns]
    graph = build_graph(compiled)
    built = time.perf_counter() - start
    state = Multitree(compiled, [best_tree(c)[0] for c in compiled])
    moves = Neighbourhood(compiled, graph, list(range(n)))
    rng = random.Random(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < 2.0:
        undo = state.apply(moves.move(state, rng))
        state.apply(undo)
        steps += 1
    per_step = (time.perf_counter() - start) / steps
    print(f"MPG: {len(graph.edges)} edges, {len(graph.owners)} distinct maximal common "
          f"subpatterns, built in {built:.2f} s; one N_edge "
          f"step (move + cost + undo) {1e3 * per_step:.3f} ms ({steps} steps in 2 s)")


def _realised(limit: float, seconds: float) -> None:
    print(f"\n-- realised on the local engine: examples/trading_rules (50 rules), first "
          f"{seconds:g} s of its events --")
    wl = load_workload(EXAMPLE / "workload.json")
    csv = pd.read_csv(EXAMPLE / "events.csv")
    csv = csv[csv["ts"] < seconds].reset_index(drop=True)
    events = pd.DataFrame({"__type": csv["symbol"], "__ts": csv["ts"], "__id": csv.index,
                           "price": csv["price"], "diff": csv["diff"]})
    base = trivial_plan(wl)
    plans = {name: evaluation(wl, wl.statistics, base, EvaluationSettings(name, "edge", limit))
             for name in ("tabu", "sa", "re", "sh")}
    plans["trivial"] = base
    timings, found = {}, {}
    for name, plan in plans.items():
        job = job_from_json(job_data(wl, plan))
        start = time.perf_counter()
        result = run_local(events, job)
        timings[name] = time.perf_counter() - start
        found[name] = {p: sorted(map(_canonical, m)) for p, m in result.matches.items()}
    same = all(found[n] == found["trivial"] for n in found)
    total = sum(len(m) for m in found["trivial"].values())
    print(f"{len(events)} events, {total} matches; matches identical across plans: {same}")
    for name in ("trivial", "sh", "re", "sa", "tabu"):
        cost = plans[name].sharing["modelled_cost"]["chosen"] if plans[name].sharing else None
        print(f"{name:>8}: {timings[name]:.2f} s wall ({timings['trivial'] / timings[name]:.2f}x "
              f"vs trivial)" + (f", modelled {cost:.4g}" if cost is not None else ""))
    print("note: run in process with each plan's shared subtrees computed once; "
          "`python -m benchmarks sharing_engine` splits the time into joins and output")


def _canonical(match: dict) -> str:
    return json.dumps(match, sort_keys=True, default=str)
