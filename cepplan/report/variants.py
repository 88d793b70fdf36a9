"""The report's with-and-without comparisons: a workload with contexts planned with the contexts
pass and context-independently (seed 003), and a workload with consumer queries planned with
each covering solver against computing every query on its own (seed 000)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from cepplan.costmodels.contexts import pushed_down_cost
from cepplan.planner.compose import Settings, own_cost
from cepplan.planner.contexts import group_workload
from cepplan.planner.covering import CPSAT, MNH, MQC
from cepplan.planner.covering_plan import CoveringSettings, covering_section
from cepplan.planner.deadline import share as share_of
from cepplan.planner.optimize import optimize
from cepplan.planner.plan import Plan
from cepplan.planner.shared import plan_workload
from cepplan.workload.model import Statistics, Workload

COVERING_SOLVERS = (CPSAT, MQC, MNH)


def independent_workload(workload: Workload) -> Workload:
    """The workload without its contexts: every pattern runs all the time."""
    return replace(workload, contexts=None)


def contexts_comparison(workload: Workload, statistics: Statistics, settings: Settings,
                        with_contexts: Plan, stats_file: str | None) -> tuple[dict, Plan]:
    """The report's `contexts`: each grouped window (the contexts that hold together, its
    expected share of time, the patterns it runs and suspends, its modelled cost) and per
    pattern its modelled cost and latency planned per group and context-independently; the
    workload's cost with contexts weighs each group by its time share (seed 003 Thm 1).
    Also returns the context-independent plan (same planner, no contexts pass). That plan
    and the groups' share one time limit, in equal parts."""
    section = with_contexts.contexts
    deadline = time.perf_counter() + settings.time_limit
    parts = 1 + len(section["groups"])
    independent = optimize(independent_workload(workload), statistics, settings, stats_file,
                           deadline=share_of(deadline, parts), invariants=False)
    plan = independent.plan
    names = [p.name for p in workload.patterns]
    groups, per_pattern = [], {n: [] for n in names}
    for position, group in enumerate(section["groups"]):
        running = group["patterns"]
        outcome = plan_workload(group_workload(workload, running), statistics, settings,
                                deadline=share_of(deadline, parts - 1 - position), end=deadline)
        share = group["expected_time_share"]
        for name in running:
            chosen = outcome.chosen[name]
            per_pattern[name].append((share, own_cost(outcome.results[name], chosen),
                                      chosen.latency))
        groups.append({"contexts": group["contexts"], "expected_time_share": share,
                       "patterns": running,
                       "suspended": [n for n in names if n not in running],
                       "expected_cost": group["expected_cost"]})
    shares_known = all(g["expected_time_share"] is not None for g in groups)
    patterns = []
    for name in names:
        body = plan.patterns[name]
        active = section["expected_active_share"].get(name)
        runs = per_pattern[name]
        patterns.append({
            "pattern": name, "contexts": section["pattern_contexts"].get(name, []),
            "expected_active_share": active,
            "independent": {"cost": body.detection.expected_cost,
                            "latency": body.detection.latency},
            "with_contexts": {
                "cost": sum(s * c for s, c, _ in runs) if shares_known else None,
                "cost_pushed_down": (pushed_down_cost(body.detection.expected_cost, active)
                                      if active is not None else None),
                "latency": max((latency for _, _, latency in runs), default=None)}})
    total = (sum(g["expected_time_share"] * g["expected_cost"] for g in groups)
             if shares_known else None)
    report = {
        "unit": f"events/{workload.time_unit}",
        "time_shares": "measured" if shares_known else None,
        "variants": [
            {"name": "with contexts", "total_cost": total,
             "description": "each grouped window planned on its own; a pattern receives "
                            "events only while one of its contexts holds"},
            {"name": "context-independent", "total_cost": independent.outcome.total,
             "description": "the same planner, every pattern running all the time"}],
        "groups": groups,
        "patterns": patterns,
        "search_space": section["search_space"],
    }
    return report, plan


def covering_comparison(workload: Workload, statistics: Statistics,
                        settings: Settings) -> tuple[dict[str, Any], dict[str, dict]]:
    """The report's `covering`: per covering solver, each operator's cover (the queries whose
    selections are computed) against all its queries, and the expected operator executions
    per batch with and without reuse; the neighbour pairs with their expected precision,
    recall and disparity against the served query's thresholds. Also returns each solver's
    plan section (to run the consumer queries with it). Each solver's section is estimated
    within one time limit."""
    sections = {solver: covering_section(workload, statistics, CoveringSettings(
        solver, min(settings.time_limit, 10.0), settings.seed),
        time.perf_counter() + settings.time_limit) for solver in COVERING_SOLVERS}
    first = sections[COVERING_SOLVERS[0]]
    thresholds = {q["id"]: q["qor"] for q in first["queries"]}
    solvers = []
    for solver, section in sections.items():
        operators = []
        for group in section["groups"]:
            expected = group["expected"] or {}
            cover = expected.get("covering_queries")
            operators.append({
                "operator": group["operator"], "queries": len(group["queries"]),
                "cover": cover, "cover_size": None if cover is None else len(cover),
                "executions_without_reuse": expected.get("executions_without_reuse"),
                "executions_with_reuse": expected.get("executions_with_reuse")})
        totals = section["expected"]
        solvers.append({"solver": solver, "operators": operators,
                        "executions_without_reuse": totals["executions_without_reuse"],
                        "executions_with_reuse": totals["executions_with_reuse"],
                        "saved_share": totals["saved_share"]})
    pairs = [{**pair, "operator": group["operator"], "thresholds": thresholds[pair["served"]]}
             for group in first["groups"] for pair in group["pairs"]]
    return ({"unit": first["unit"], "batch": first["batch"], "solvers": solvers,
             "pairs": pairs}, sections)

