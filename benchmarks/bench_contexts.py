"""Context benchmarks (seed 003 §7), all with the in-process runner, ratios from one run.

1. Context-aware vs context-independent on the Linear-Road-like stream: two deriving patterns
   (congestion starts / ends) and four toll patterns active only in congestion. The
   context-independent run evaluates every pattern over every event; its matches, filtered
   to the context windows, must equal the context-aware ones. Wall-time win as the windows
   that suspend the toll patterns cover 20 → 95 % of the events (seed 003 Fig. 12(c)).
2. Sharing across overlapping windows (seed 003 Fig. 14): 30 context windows of 15 min, each
   starting 5 min after the previous (overlap 10 min), 4 patterns each: grouped (each pattern
   once over the union of its windows, partial matches kept across grouped windows) vs
   non-grouped (each window on its own).
3. Planning with vs without grouping, 6-24 processing patterns: the whole optimizer (with the
   sharing search) on the workload with and without contexts; Bell-number search spaces (§5.3).
4. Grouping (Listing 1) vs brute force on random interval sets: the workload at every instant.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from cepplan.costmodels.contexts import bell, grouped_search_space
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.context_windows import ContextSpec, keep_match, window_mask
from cepplan.engine_adapter.runtime.contexts import run_with_contexts
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.compose import Settings
from cepplan.planner.contexts import group_windows
from cepplan.planner.evaluation import EvaluationSettings
from cepplan.planner.optimize import optimize
from cepplan.planner.plan import trivial_plan
from cepplan.stats.linear_road import ATTRIBUTES, REPORT, linear_road
from cepplan.workload import build_workload
from cepplan.workload.columns import EVENT_TS
from cepplan.workload.model import Statistics

SLOW = {"name": "many_slow_cars", "structure": ["SEQ", "p1:R", "p2:R", "p3:R"],
        "where": ["p1.speed < 40", "p2.speed < 40", "p3.speed < 40", "p1.vid != p2.vid",
                  "p2.vid != p3.vid", "p1.vid != p3.vid"],
        "partition_by": ["segment"], "within": 30}
FAST = {"name": "few_fast_cars", "structure": ["SEQ", "p1:R", "p2:R"],
        "where": ["p1.speed > 60", "p2.speed > 60", "p1.vid != p2.vid"],
        "partition_by": ["segment"], "within": 30}


def _retype(pattern: dict) -> dict:
    return json.loads(json.dumps(pattern).replace(":R\"", f":{REPORT}\""))


def traffic_workload(tolls: int = 4):
    """Deriving patterns of the traffic example and `tolls` heavy toll patterns that run
    only in congestion (three reports of one car within 95 s, speeds rising or not)."""
    toll = [{"name": f"toll_{i}", "structure": ["SEQ", "a:R", "b:R", "c:R"],
             "where": ["a.vid == b.vid", "b.vid == c.vid", f"a.speed > {i}"],
             "partition_by": ["segment"], "within": 95} for i in range(tolls)]
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {REPORT: {"attributes": dict(ATTRIBUTES)}},
        "patterns": [_retype(p) for p in (SLOW, FAST, *toll)],
        "contexts": {"partition_by": ["segment"], "initial": "clear",
                     "types": {"clear": {"patterns": ["many_slow_cars"]},
                               "congestion": {"patterns": ["few_fast_cars",
                                                           *(t["name"] for t in toll)]}},
                     "transitions": [
                         {"on": "many_slow_cars", "action": "switch", "from": "clear",
                          "to": "congestion"},
                         {"on": "few_fast_cars", "action": "switch", "from": "congestion",
                          "to": "clear"}]}})


def _identity(obj: dict) -> str:
    return json.dumps(obj, sort_keys=True)


def _filtered_equal(aware, independent, job) -> bool:
    """Context-independent matches filtered to the aware run's windows == aware matches."""
    spec = ContextSpec.from_json(job.data["contexts"])
    for name, found in aware.matches.items():
        kept = {_identity(m) for m in independent.matches[name]
                if keep_match(m, spec.contexts_of(name), aware.windows, spec.partition_by)}
        if kept != {_identity(m) for m in found}:
            return False
    return True


def context_win(quick: bool) -> None:
    workload = traffic_workload()
    data = job_data(workload, trivial_plan(workload))
    aware_job = job_from_json(data)
    blind_job = job_from_json({**data, "contexts": None})
    spec = ContextSpec.from_json(data["contexts"])
    segments, duration, cars = (2, 1200.0, 12) if quick else (4, 1800.0, 24)
    print(f"Linear-Road-like stream, {segments} segments x {duration:g} s, {cars} cars per "
          "segment; 2 deriving + 4 toll patterns (tolls only in congestion)")
    print(f"{'suspended':>10} {'events':>7} {'aware s':>8} {'independent s':>14} {'win':>6} "
          f"{'toll matches':>13} {'identical':>10}")
    for share in (0.8, 0.5, 0.2, 0.1, 0.05):
        events = linear_road(segments=segments, duration=duration, congestion_share=share,
                             cars=cars, accidents=0, seed=7).events
        start = time.perf_counter()
        aware = run_local(events, aware_job)
        aware_s = time.perf_counter() - start
        start = time.perf_counter()
        blind = run_local(events, blind_job)
        blind_s = time.perf_counter() - start
        inside = window_mask(events, EVENT_TS, aware.windows, ("congestion",),
                             spec.partition_by).mean()
        tolls = sum(len(v) for k, v in aware.matches.items() if k.startswith("toll"))
        print(f"{1 - inside:>9.0%} {len(events):>7} {aware_s:>8.2f} {blind_s:>14.2f} "
              f"{blind_s / aware_s:>5.1f}x {tolls:>13} "
              f"{_filtered_equal(aware, blind, aware_job)!s:>10}")


def overlap_workload(windows: int, per_window: int = 4):
    """`windows` context types opened and closed by marker events, each running the same
    `per_window` patterns over readings (so overlapping windows can share them)."""
    patterns = [{"name": f"q{j}", "structure": ["SEQ", "a:Reading", "b:Reading", "c:Reading"],
                 "where": ["a.v < b.v", f"b.v + {85 - j} < c.v"], "within": 60}
                for j in range(per_window)]
    for i in range(windows):
        for op in ("open", "close"):
            patterns.append({"name": f"{op}_{i}", "structure": ["SEQ", "m:Marker"],
                             "where": [f"m.w == {i}", f"m.op == '{op}'"]})
    names = [f"q{j}" for j in range(per_window)]
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {"Reading": {"attributes": {"v": "double"}},
                        "Marker": {"attributes": {"w": "long", "op": "string"}}},
        "patterns": patterns,
        "contexts": {"initial": "idle", "types": {
            "idle": {"patterns": []},
            **{f"w{i}": {"patterns": names} for i in range(windows)}},
            "transitions": [t for i in range(windows) for t in (
                {"on": f"open_{i}", "action": "initiate", "context": f"w{i}"},
                {"on": f"close_{i}", "action": "terminate", "context": f"w{i}"})]}})


def overlap_events(windows: int, length: float, every: float, rate: float,
                   seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    end = (windows - 1) * every + length + 60.0
    n = rng.poisson(rate * end)
    readings = pd.DataFrame({"__type": "Reading", "__ts": np.sort(rng.uniform(0, end, n)),
                             "v": rng.uniform(0, 100, n)})
    markers = pd.DataFrame([{"__type": "Marker", "__ts": 30.0 + i * every + d, "w": i, "op": op}
                            for i in range(windows)
                            for op, d in (("open", 0.0), ("close", length))])
    events = pd.concat([readings, markers], ignore_index=True).sort_values("__ts")
    events["__id"] = np.arange(len(events), dtype=np.int64)
    return events.reset_index(drop=True)


def sharing(quick: bool) -> None:
    windows = 10 if quick else 30
    workload = overlap_workload(windows)
    job = job_from_json(job_data(workload, trivial_plan(workload)))
    events = overlap_events(windows, 900.0, 300.0, rate=0.25 if quick else 0.5)
    start = time.perf_counter()
    grouped = run_with_contexts(events, job, grouped=True)
    grouped_s = time.perf_counter() - start
    start = time.perf_counter()
    alone = run_with_contexts(events, job, grouped=False)
    alone_s = time.perf_counter() - start
    same = all({_identity(m) for m in grouped.matches[n]} ==
               {_identity(m) for m in alone.matches[n]} for n in grouped.matches)
    found = sum(len(grouped.matches[f"q{j}"]) for j in range(4))
    print(f"{windows} windows of 15 min every 5 min (overlap 10 min), 4 shared patterns each, "
          f"{len(events)} events: grouped {grouped_s:.2f} s, one window at a time "
          f"{alone_s:.2f} s: {alone_s / grouped_s:.1f}x; matches {found}, identical: {same}")


def cycle_workload(processing: int, per_context: int = 3):
    """`processing` patterns in contexts of `per_context` patterns each, switched in a cycle
    by one deriving pattern per context (the groups never overlap)."""
    count = processing // per_context
    patterns, types, transitions = [], {}, []
    for c in range(count):
        names = [f"p{c}_{j}" for j in range(per_context)]
        patterns += [{"name": n, "structure": ["SEQ", "a:A", "b:B", "c:C"],
                      "where": [f"a.v < b.v + {j}", "b.v < c.v"], "within": 10}
                     for j, n in enumerate(names)]
        patterns.append({"name": f"leave_{c}", "structure": ["SEQ", "x:D"],
                         "where": [f"x.v == {c}"]})
        types[f"c{c}"] = {"patterns": [*names, f"leave_{c}"]}
        transitions.append({"on": f"leave_{c}", "action": "switch", "from": f"c{c}",
                            "to": f"c{(c + 1) % count}"})
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "double"}} for t in "ABCD"},
        "patterns": patterns,
        "contexts": {"initial": "c0", "types": types, "transitions": transitions}})


def planning(quick: bool) -> None:
    """The whole optimizer (acquisition, contexts, the sharing search) on the workload with
    its contexts vs the same workload context-independent (seed 003 §5.3, Fig. 15 shape):
    grouping shrinks the sharing search to pairs of patterns that can run together."""
    stats = Statistics(rates={"A": 1.0, "B": 2.0, "C": 0.5, "D": 0.1})
    search = EvaluationSettings(search="tabu", time_limit=30.0)
    print("processing patterns in contexts of 3, plus one deriving pattern per context; "
          "tabu search, median of 3")
    print(f"{'processing':>10} {'all':>4} {'groups':>6} {'whole s':>8} {'grouped s':>9} "
          f"{'ratio':>6} {'pairs whole':>11} {'grouped':>7} {'B(all)':>20} "
          f"{'sum B(group)':>12} {'space ratio':>12}")
    for processing in (6, 12) if quick else (6, 12, 18, 24):
        workload = cycle_workload(processing)
        flat = replace(workload, contexts=None)
        timed = {}
        for name, which in (("whole", flat), ("grouped", workload)):
            runs = []
            for _ in range(3):
                start = time.perf_counter()
                plan = optimize(which, stats, Settings(), evaluation_settings=search,
                                invariants=False).plan  # the search timed, as it was
                runs.append(time.perf_counter() - start)
            timed[name] = (statistics.median(runs), plan.sharing["search"]["graph_edges"])
        groups = plan.contexts["groups"]
        space = bell(len(workload.patterns))
        small = grouped_search_space(len(g["patterns"]) for g in groups)
        (whole, pairs), (grouped, grouped_pairs) = timed["whole"], timed["grouped"]
        print(f"{processing:>10} {len(workload.patterns):>4} {len(groups):>6} {whole:>8.3f} "
              f"{grouped:>9.3f} {whole / grouped:>5.1f}x {pairs:>11} {grouped_pairs:>7} "
              f"{space:>20.4g} {small:>12} {space / small:>12.3g}")


def grouping_check(quick: bool) -> None:
    rng = random.Random(0)
    sets = 200 if quick else 1000
    wrong = 0
    for _ in range(sets):
        windows = []
        for _ in range(rng.randint(1, 10)):
            start = rng.randint(0, 30)
            windows.append((float(start), float(start + rng.randint(1, 12)),
                            frozenset(rng.sample(["q1", "q2", "q3", "q4", "q5", "q6"],
                                                 rng.randint(1, 3)))))
        grouped = group_windows(windows)
        for tenth in range(0, 430):
            instant = tenth / 10 + 0.05
            truth = frozenset().union(*(q for s, e, q in windows if s < instant <= e))
            found = [q for s, e, q in grouped if s < instant <= e]
            wrong += (found[0] if found else frozenset()) != truth or len(found) > 1
    print(f"grouping vs brute force: {sets} random interval sets, {sets * 430} instants, "
          f"{wrong} wrong")


def main(quick: bool = False) -> None:
    for title, part in (("context-aware vs context-independent", context_win),
                        ("sharing across overlapping windows", sharing),
                        ("planning with vs without grouping", planning),
                        ("grouping correctness", grouping_check)):
        print(f"\n-- {title}")
        part(quick)

