"""Shared complex subevents: Algorithm 2 of seed 002 §5.1, for several shared nodes.

When several parents monitor the same complex subevent s, its events are transmitted once for
all of them. With P_a the fraction of time parent a monitors s (the absolute fraction: a's own
monitoring fraction of s times the fraction of time a itself runs), and parents independent,
s costs c_s · (1 - Π_a (1 - P_a)) instead of c_s · Σ_a P_a. Each iteration re-plans every node
with each parent charged the shared cost of s per unit of its own monitoring,
g = (1 - Π(1 - P)) / Σ P ("shared cost of s under P", lines 13-19), then recomputes P from the
new plans; it stops at a local minimum of the true shared total (line 20). Starting only from
the independent plans, a parent never sees a discount for monitoring s earlier unless the
others already do, so the search also starts from "every parent monitors s continuously"
(P = 1); the better local minimum wins, and neither is kept unless it beats the independent
plans: the total never rises.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from cepplan.costmodels.operators import OR, monitoring_fractions
from cepplan.planner.candidates import Candidate
from cepplan.planner.compose import NodeResult, Settings, compose, select
from cepplan.planner.deadline import TimeLimitTooShort
from cepplan.workload.detection_graph import COMPLEX, bottom_up_order, detection_graph
from cepplan.workload.model import Statistics, Workload

MAX_ITERATIONS = 12


@dataclass(frozen=True)
class SharedOutcome:
    """The plans kept, their results, and the totals with and without the optimisation."""

    results: Mapping[str, NodeResult]
    chosen: Mapping[str, Candidate]
    independent_total: float
    total: float
    iterations: int
    shared: tuple[str, ...]
    naive_total: float = 0.0


def shared_complex(workload: Workload) -> list[str]:
    """Complex events bound by more than one parent pattern."""
    graph = detection_graph(workload)
    return sorted(n for n in graph if graph.nodes[n]["kind"] == COMPLEX
                  and graph.in_degree(n) > 1)


def plan_workload(workload: Workload, statistics: Statistics, settings: Settings,
                  share: bool = True, deadline: float | None = None,
                  end: float = math.inf) -> SharedOutcome:
    """Independent hierarchical plans, improved by Algorithm 2 when subevents are shared;
    every round's solvers end by `deadline` (`time.perf_counter()` time; default: the time
    limit from now). TimeLimitTooShort when the first round cannot give every pattern a
    plan by `end` (the whole run's deadline); a later round that cannot is not kept."""
    if deadline is None:
        deadline = time.perf_counter() + settings.time_limit  # one limit for every round
    results = compose(workload, statistics, settings, deadline=deadline, end=end)
    chosen = select(workload, results)
    independent, usage = evaluate_total(workload, results, chosen)
    shared = tuple(shared_complex(workload)) if share else ()
    best = SharedOutcome(results, chosen, independent, independent, 0, shared,
                         naive_total(workload, results))
    if not shared:
        return best
    ones = {key: 1.0 for key in usage}
    iterations = 0
    for start in (usage, ones):
        current_total, monitoring, previous = math.inf, start, None
        if start is usage:
            current_total = independent
        for _ in range(MAX_ITERATIONS):
            if time.perf_counter() > deadline:  # out of time: keep the best plans so far
                break
            iterations += 1
            try:
                results = compose(workload, statistics, settings, discounts(monitoring),
                                  deadline, end=deadline)
            except TimeLimitTooShort:  # the round would not end in time: the best plans so far
                break
            chosen = select(workload, results)
            total, new_usage = evaluate_total(workload, results, chosen)
            if total >= current_total - 1e-12 or _same(chosen, previous):
                break
            current_total, monitoring, previous = total, new_usage, chosen
            if total < best.total - 1e-12:
                best = SharedOutcome(results, chosen, independent, total, 0, shared)
    return SharedOutcome(best.results, best.chosen, independent, best.total, iterations, shared,
                         naive_total(workload, best.results))


def discounts(usage: Mapping[tuple[str, str, str], float]) -> dict[tuple[str, str], float]:
    """Per (parent, variable) binding a shared node: the shared cost of s per unit of
    monitoring, g = (1 - Π(1 - P)) / Σ P (seed 002 §5.1, Algorithm 2 line 19)."""
    by_node: dict[str, list[float]] = {}
    for (_, _, node), p in usage.items():
        by_node.setdefault(node, []).append(min(1.0, p))
    scale = {}
    for node, ps in by_node.items():
        total = sum(ps)
        scale[node] = (1.0 - math.prod(1.0 - p for p in ps)) / total if total > 0 else 1.0
    return {(parent, var): scale[node] for (parent, var, node) in usage}


def evaluate_total(workload: Workload, results: Mapping[str, NodeResult],
                   chosen: Mapping[str, Candidate]
                   ) -> tuple[float, dict[tuple[str, str, str], float]]:
    """(total expected events sent per time unit for the whole workload, P per (parent,
    variable, shared node)). Each node runs a fraction of the time (its weight: 1 for a
    root); a primitive variable requests its type's events a fraction weight · f_e of the
    time and keeps a fraction q_e (its filters). An event is sent once whoever requests it
    (seed 002 §3.3), so a type costs rate · (1 - Π_uses (1 - weight · f_e · q_e)), uses taken
    as independent; a type pushed unfiltered anywhere costs its full rate once."""
    graph = detection_graph(workload)
    shared = {n for n in graph if graph.nodes[n]["kind"] == COMPLEX and graph.in_degree(n) > 1}
    contributions: dict[str, list[float]] = {}
    usage: dict[tuple[str, str, str], float] = {}
    requests: dict[str, list[float]] = {}
    rates: dict[str, float] = {}
    for name in reversed(bottom_up_order(graph)):
        result = results[name]
        parts = contributions.get(name, [1.0])
        weight = _union(parts) if name in shared else sum(parts)
        if result.model.operator == OR:
            fractions = {o.var: 1.0 for o in result.model.operands}
        else:
            fractions = monitoring_fractions(result.model, chosen[name].steps)
        for var, fraction in fractions.items():
            child = result.children.get(var)
            if child is None:
                operand = result.model.operand(var)
                kept = operand.selectivity
                if kept:  # the type's rate; a filter that keeps nothing says nothing of it
                    rates[operand.event_type] = operand.occurrence.rate / kept
                requests.setdefault(operand.event_type, []).append(
                    min(1.0, weight * fraction) * kept)
            else:
                contributions.setdefault(child, []).append(weight * fraction)
                if child in shared:
                    usage[(name, var, child)] = weight * fraction
    total = sum(rates.get(t, 0.0) * _union(ps) for t, ps in requests.items())
    return total, usage


def naive_total(workload: Workload, results: Mapping[str, NodeResult]) -> float:
    """Events per time unit when every primitive variable of every pattern is pushed (its
    filters still pushed down), each event sent once: rate · (1 - Π_uses (1 - q_e))."""
    rates: dict[str, float] = {}
    requests: dict[str, list[float]] = {}
    for result in results.values():
        for operand in result.model.operands:
            if operand.event_type and operand.selectivity:
                rates[operand.event_type] = operand.occurrence.rate / operand.selectivity
                requests.setdefault(operand.event_type, []).append(operand.selectivity)
    return sum(rates[t] * _union(ps) for t, ps in requests.items())


def _union(parts: list[float]) -> float:
    """P(at least one of independent monitors is on)."""
    return 1.0 - math.prod(1.0 - min(1.0, p) for p in parts)


def _same(a: Mapping[str, Candidate], b: Mapping[str, Candidate] | None) -> bool:
    return b is not None and all(a[k].steps == b[k].steps and a[k].choices == b[k].choices
                                 for k in a)
