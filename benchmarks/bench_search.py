"""The evaluation search (seed 004 §6): what the seed's figures report, reproduced under each
reading of its workload generator; modelled Cost_tree^multi of the chosen multitree vs
trivial, SH, RE and the floor no plan goes below, over five random workloads per window; SA vs
tabu, edge vs vertex neighbourhoods, cost vs time; optimality on small workloads against
brute force over every multitree; planning time for 1,000 patterns; the realised effect of
the chosen join orders on the local engine.

    python -m benchmarks search [--quick]       # a few minutes
    CEPPLAN_BENCH_SEARCH_LONG=1 python -m benchmarks search   # every window, full limits

The default reading of §6.1's ranges is log-uniform draws: docs/sharing.md ("The synthetic
workloads") says why: it reproduces the seed's trends, uniform draws do not; the uniform reading is
reported beside it.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import statistics
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
    sh_cost,
    sharing_floor,
    trivial_trees,
    unshared_cost,
)
from cepplan.search.graph import build_graph
from cepplan.search.local import (
    BUSHY,
    LEFT_DEEP,
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
LOG, UNIFORM = "log-uniform", "uniform"
DEFAULT_SPREAD, OTHER_SPREAD = LOG, UNIFORM  # the evidence: docs/sharing.md
COMBOS = (("sa", "edge"), ("sa", "vertex:4"), ("tabu", "edge"), ("tabu", "vertex:4"))
PATIENCE = 3000  # neighbours without improvement before the search stops, as `optimize`


def main(quick: bool = False) -> None:
    long = os.environ.get("CEPPLAN_BENCH_SEARCH_LONG") == "1"
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)"
          + ("; long sweep" if long else ""))
    limit = 2.0 if quick else 10.0
    seeds = (1, 2) if quick else (1, 2, 3, 4, 5)
    _seed_figures(seeds, long)
    windows = {LOG: ("50ms", "100ms", "200ms", "500ms", "1s"),
               UNIFORM: ("20ms", "50ms", "100ms", "200ms", "1s")}
    if not long:
        windows = {LOG: ("100ms", "200ms", "500ms"), UNIFORM: ("50ms", "100ms")}
    for spread in (DEFAULT_SPREAD, OTHER_SPREAD):
        for window in windows[spread]:
            _targets(window, spread, limit, seeds, patience=None if long else PATIENCE)
    for spread, window in ((DEFAULT_SPREAD, "100ms"), (OTHER_SPREAD, "50ms")):
        for seed in (seeds if long else seeds[:1]):
            _combos(window, spread, limit, seed)
    _exactness(20 if quick else 100)
    _planning_time(300 if quick else 1000)
    _realised(limit, seconds=100.0 if quick else 400.0)


def _problem(n: int, seed: int, window: str, spread: str = DEFAULT_SPREAD,
             pair_share: float | None = None, avg_size: float = 5.0,
             n_types: int = 20) -> tuple[Problem, object]:
    raw = synthetic_workload(n, avg_size, n_types, seed=seed, spread=spread,
                             pair_share=pair_share)
    for pattern in raw["patterns"]:
        pattern["within"] = window
    wl = build_workload(raw)
    return problem_from_workload(wl, wl.statistics), wl


def _compiled(problem: Problem) -> list[Compiled]:
    interner = Interner()
    return [Compiled(p, interner) for p in problem.patterns]


def _floor(compiled: list[Compiled]) -> float:
    """The tighter of the two floors no multitree goes below (`cost_floor`, `sharing_floor`)."""
    return max(sum(cost_floor(compiled)), sharing_floor(compiled))


FIGURE_COLUMNS = (
    ("gain", "trivial ÷ plan"), ("gain1", "same, trivial's leaves once"),
    ("re", "trivial ÷ RE"), ("sh", "trivial ÷ SH"), ("vs", "plan below best SH/RE %"),
    ("prefix", "prefix-only ÷ subtree plan"), ("gap", "plan ÷ floor"),
    ("roots", "complete matches % of trivial"), ("density", "MPG density"))


def _seed_figures(seeds: tuple[int, ...], long: bool) -> None:
    """What each reading of §6.1 gives as the seed's figures vary their parameter (window:
    Fig. 11(c)/12(c); patterns: Fig. 10/12(a); pattern size: Fig. 11(a)/12(b); event types,
    i.e. how much patterns share: App. D Fig. 14; comparisons per pattern: §6.1's "half the
    pattern size" or issue 11's "half the pairs"). 'plan' is the search's start (each
    pattern's cheapest tree, every node shared where identical: the search adds 0–3 % to it),
    'prefix-only' the same with left-deep trees (the seed's EDGE-PREFIX, §3)."""
    print(f"\n-- the seed's figures under each reading, 100 patterns unless varied, no search; "
          f"median / worst of seeds {', '.join(map(str, seeds))} --")
    print("columns: " + "; ".join(f"{k} = {label}" for k, label in FIGURE_COLUMNS))
    at = ("100ms", "500ms") if long else ("100ms",)
    rows = [("window", w, {"window": w}) for w in
            ("10ms", "20ms", "50ms", "100ms", "200ms", "500ms", "1s", "2s")]
    for window in at:
        rows += [(f"patterns@{window}", str(n), {"window": window, "n": n})
                 for n in (25, 50, 100, 200)]
        rows += [(f"size@{window}", str(a), {"window": window, "avg_size": float(a)})
                 for a in (3, 4, 5, 6, 7)]
        rows += [(f"types@{window}", str(t), {"window": window, "n_types": t})
                 for t in (8, 12, 20, 40)]
        rows += [(f"comparisons@{window}", label, {"window": window, "pair_share": share})
                 for label, share in (("size/2", None), ("pairs/2", 0.5))]
    print(f"{'figure':>19} {'value':>7} {'reading':>11} " +
          " ".join(f"{k:>11}" for k, _ in FIGURE_COLUMNS))
    for figure, value, settings in rows:
        for spread in (DEFAULT_SPREAD, OTHER_SPREAD):
            found = [_reach(spread=spread, seed=seed, **settings) for seed in seeds]
            cells = []
            for key, _ in FIGURE_COLUMNS:
                values = [f[key] for f in found]
                worst = max(values) if key in ("gap", "roots", "prefix") else min(values)
                shape = ".1f" if key in ("vs", "roots") else ".2f" if key == "density" else ".3g"
                cells.append(f"{statistics.median(values):{shape}}/{worst:{shape}}")
            print(f"{figure:>19} {value:>7} {spread:>11} " + " ".join(f"{c:>11}" for c in cells))


def _reach(window: str, spread: str, seed: int, n: int = 100, avg_size: float = 5.0,
           n_types: int = 20, pair_share: float | None = None) -> dict[str, float]:
    problem, _ = _problem(n, seed, window, spread, pair_share, avg_size, n_types)
    compiled = _compiled(problem)
    trivial = unshared_cost(compiled, trivial_trees(compiled))
    local = reordered_trees(compiled, BUSHY)
    plan = multi_cost(compiled, local)
    graph = build_graph(compiled)
    best_other = min(sh_cost(compiled, graph), unshared_cost(compiled, local))
    roots, negation, leaves_once = cost_floor(compiled)
    leaves = sum(c.cost[1 << i] for c in compiled for i in range(c.m))
    n_p = len(compiled)
    return {"gain": trivial / plan, "gain1": (trivial - leaves + leaves_once) / plan,
            "re": trivial / unshared_cost(compiled, local),
            "sh": trivial / sh_cost(compiled, graph), "vs": 100 * (1 - plan / best_other),
            "prefix": multi_cost(compiled, reordered_trees(compiled, LEFT_DEEP)) / plan,
            "gap": plan / _floor(compiled), "roots": 100 * (roots + negation) / trivial,
            "density": 2 * len(graph.edges) / (n_p * (n_p - 1))}


def _degree(problem: Problem) -> str:
    """How much the workload can share: the MPG's density and patterns per subpattern."""
    compiled = _compiled(problem)
    graph = build_graph(compiled)
    owners = sorted(len(users) for users in graph.owners.values())
    n = len(compiled)
    greedy = unshared_cost(compiled, greedy_trees(compiled))
    best = unshared_cost(compiled, reordered_trees(compiled, BUSHY))
    return (f"MPG: {len(graph.edges)} edges (density {2 * len(graph.edges) / (n * (n - 1)):.2f}), "
            f"{len(owners)} maximal common subpatterns shared by {owners[len(owners) // 2]} "
            f"patterns (median), {owners[-1]} (most); RE as the seed builds it (greedy order) "
            f"costs {greedy / best:.3f}x the RE used here (each pattern's cheapest tree)")


def _targets(window: str, spread: str, limit: float, seeds: tuple[int, ...],
             patience: int | None) -> None:
    """Issue 11's targets on one window, tabu-edge, one workload per seed: trivial ÷ chosen
    (≥ 10×), chosen below the best of SH and RE (≥ 25 %), and chosen ÷ the floor (how much
    any search could still gain)."""
    stop = ", used in full" if patience is None else \
        f" (or {patience} neighbours without improvement, as `optimize`)"
    print(f"\n-- targets: 100 patterns, avg size 5, window {window}, {spread} draws, tabu-edge, "
          f"limit {limit:g} s{stop} --")
    print(f"{'seed':>4} {'trivial':>10} {'SH':>10} {'RE':>10} {'chosen':>10} {'floor':>10} "
          f"{'trivial/chosen':>14} {'below SH/RE':>11} {'chosen/floor':>12} {'over start':>10} "
          f"{'seconds':>7} {'roots':>6}")
    gains, belows, gaps, reach_gain, reach_below = [], [], [], [], []
    for seed in seeds:
        problem, _ = _problem(100, seed, window, spread)
        r = search(problem, algorithm="tabu", neighbourhood="edge", time_limit=limit, seed=seed,
                   patience=patience)
        compiled = _compiled(problem)
        floor = _floor(compiled)
        roots, negation, _ = cost_floor(compiled)
        gains.append(r.trivial_cost / r.cost)
        belows.append(100 * (1 - r.cost / min(r.sh_cost, r.re_cost)))
        gaps.append(r.cost / floor)
        reach_gain.append(r.trivial_cost / floor)
        reach_below.append(100 * (1 - floor / min(r.sh_cost, r.re_cost)))
        print(f"{seed:>4} {r.trivial_cost:>10.4g} {r.sh_cost:>10.4g} {r.re_cost:>10.4g} "
              f"{r.cost:>10.4g} {floor:>10.4g} {gains[-1]:>13.1f}x {belows[-1]:>10.1f}% "
              f"{gaps[-1]:>12.3f} {100 * (1 - r.cost / r.trace[0][1]):>9.1f}% "
              f"{r.seconds:>7.2f} {100 * (roots + negation) / r.trivial_cost:>5.1f}%")
    print(f"{'':>4} median / worst: trivial ÷ chosen {statistics.median(gains):.1f} / "
          f"{min(gains):.1f}x (≥ 10× in {sum(g >= 10 for g in gains)}/{len(seeds)}); below "
          f"best of SH, RE {statistics.median(belows):.1f} / {min(belows):.1f}% (≥ 25 % in "
          f"{sum(b >= 25 for b in belows)}/{len(seeds)}); chosen ÷ floor "
          f"{statistics.median(gaps):.3f} / {max(gaps):.3f}")
    print(f"{'':>4} what any plan could reach (the floor): ≥ 10× in "
          f"{sum(g >= 10 for g in reach_gain)}/{len(seeds)} (trivial ÷ floor "
          f"{', '.join(f'{g:.1f}' for g in reach_gain)}), ≥ 25 % below the best of SH and RE in "
          f"{sum(b >= 25 for b in reach_below)}/{len(seeds)} "
          f"({', '.join(f'{b:.1f}' for b in reach_below)} %)")


def _combos(window: str, spread: str, limit: float, seed: int) -> None:
    """SA vs tabu, N_edge vs N_vertex^4, each for the whole limit (time honoured?), with the
    cost-vs-time curve and where trivial's cost lies."""
    print(f"\n-- searches compared: 100 patterns, window {window}, {spread} draws, seed {seed}, "
          f"the whole {limit:g} s limit each --")
    problem, _ = _problem(100, seed, window, spread)
    print(f"{'':>4} {_degree(problem)}")
    print(f"{'seed':>4} {'search':>14} {'cost':>10} {'trivial/cost':>12} "
          f"{'below best SH/RE':>16} {'steps':>7} {'seconds':>7} {'shared':>6}")
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
    compiled = _compiled(problem)
    roots = sum(c.cost[(1 << c.m) - 1] for c in compiled)
    negation = sum(c.pattern.negation_cost for c in compiled)
    leaves = sum(c.cost[1 << i] for c in compiled for i in range(c.m))
    _, _, once = cost_floor(compiled)
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
          f"{trivial / _floor(compiled):.2f}x")
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
