"""Hierarchical plan composition over the event detection graph (seed 002 §3.2.3).

Patterns are planned bottom-up: each node's Pareto front is built from the plans its complex
subevents propagate (at most k, chosen by a §6.3 strategy); the root picks the cheapest plan
within its latency bound, which fixes the plan of every node below it. A complex subevent
reached by several parents with different plans runs the fastest of them (it meets every
parent's latency bound; the slower parents' cost estimates are then slightly pessimistic).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import median

from cepplan.costmodels.operators import PatternModel, occurrence_rate
from cepplan.errors import InputError, Problem
from cepplan.planner import front as front_mod
from cepplan.planner.candidates import Candidate, Option, cheapest_within, evaluate
from cepplan.planner.deadline import TimeLimitTooShort
from cepplan.planner.inputs import ChildSummary, pattern_model
from cepplan.planner.strategies import limit
from cepplan.workload.detection_graph import bottom_up_order, detection_graph
from cepplan.workload.model import Statistics, Workload

AUTO = "auto"
# What follows compose for every pattern (choosing the plans, the workload's totals, the
# engine's join orders, the search's view of each pattern, the plan's entries) took 2.2-3.8x
# the patterns' floors (1,200 random patterns, under load); 3.0 overran a 4 s limit by 12 %
AFTER_COMPOSE = 5.0
# patterns timed before judging whether the rest fit in the time limit: ten, or a twentieth
# of a large workload (the first patterns' times vary most: caches, collections)
FLOOR_SAMPLE = 10


@dataclass(frozen=True)
class Settings:
    """Planner parameters: solver (auto, dp, heuristic), plans propagated per node (k, None =
    all) and how they are chosen, seed of the random strategy, time limit in seconds, the
    Poisson time step (None = fine-grained limit), and the largest DP size `auto` accepts."""

    solver: str = AUTO
    k: int | None = 8
    strategy: str = "mixture"
    seed: int = 0
    time_limit: float = 60.0
    step: float | None = None
    dp_limit: int = 12


@dataclass(frozen=True)
class NodeResult:
    """One pattern's planning result."""

    name: str
    model: PatternModel
    options: Mapping[str, list[Option]]  # as planned (shared subevents possibly discounted)
    plain_options: Mapping[str, list[Option]]  # at full cost
    front: list[Candidate]
    offered: list[Candidate]
    rate: float | None  # occurrences per time unit; None when no pattern binds this one
    naive_cost: float
    solver: str
    children: Mapping[str, str] = field(default_factory=dict)  # complex variable -> pattern


def compose(workload: Workload, statistics: Statistics, settings: Settings,
            discounts: Mapping[tuple[str, str], float] | None = None,
            deadline: float | None = None, end: float = math.inf) -> dict[str, NodeResult]:
    """Plan every pattern bottom-up; `discounts[(pattern, var)]` scales the cost of a shared
    complex subevent as its parent sees it (Algorithm 2 of seed 002 §5.1). `deadline`
    (`time.perf_counter()` time; default: the time limit from now) bounds the solvers;
    TimeLimitTooShort when the patterns' models and naive plans alone would pass `end`
    (the whole run's deadline)."""
    discounts = discounts or {}
    if deadline is None:
        deadline = time.perf_counter() + settings.time_limit
    results: dict[str, NodeResult] = {}
    graph = detection_graph(workload)
    order = bottom_up_order(graph)
    floors: list[float] = []  # each pattern's model and naive plan: what every one needs
    solving = 0.0  # seconds the solvers took: what a run without them would have had more
    for position, name in enumerate(order):
        began = time.perf_counter()
        pattern = workload.pattern(name)
        summaries = {o.event_type: ChildSummary(results[o.event_type].rate,
                                                results[o.event_type].model.window)
                     for o in pattern.operands if o.is_complex}
        model = pattern_model(workload, pattern, statistics, summaries, settings.step)
        options, plain, children = {}, {}, {}
        naive, sources = 0.0, set()
        for operand, om in zip(pattern.operands, model.operands, strict=True):
            if operand.is_complex:
                child = results[operand.event_type]
                scale = discounts.get((name, operand.var), 1.0)
                plain[operand.var] = [Option(c.cost, c.latency, i)
                                      for i, c in enumerate(child.offered)]
                options[operand.var] = [Option(c.cost * scale, c.latency, i)
                                        for i, c in enumerate(child.offered)]
                children[operand.var] = operand.event_type
                naive += child.naive_cost
            else:
                options[operand.var] = plain[operand.var] = [Option(om.occurrence.rate, 1)]
                naive += 0.0 if om.source in sources else om.occurrence.rate
                sources.add(om.source)
        positives = len(model.positives)
        solver = settings.solver
        if solver == AUTO:
            solver = front_mod.DP if positives <= settings.dp_limit else front_mod.HEURISTIC
        bound = pattern.latency.max_steps if pattern.latency else None
        one_step = front_mod.naive_plan(model, options)  # what every pattern gets
        # only a parent reads the rate (it costs milliseconds for a long SEQ)
        rate = occurrence_rate(model) if graph.in_degree(name) else None
        floors.append(time.perf_counter() - began)
        # the solvers stop early enough for every pattern still to come to get its plan,
        # and for choosing and writing down the plans of all
        still = len(order) - position - 1 + AFTER_COMPOSE * len(order)  # floors to come
        reserve = still * _typical(floors)
        if position + 1 == max(FLOOR_SAMPLE, len(order) // 20):
            _check_floors(still, floors, solving, end, len(order))
        began = time.perf_counter()
        front, used = front_mod.pattern_front(model, options, solver, bound, deadline - reserve,
                                              one_step)
        solving += time.perf_counter() - began
        feasible = [c for c in front if bound is None or c.latency <= bound]
        offered = limit(feasible or front[:1], settings.k, settings.strategy, settings.seed)
        results[name] = NodeResult(name, model, options, plain, front, offered,
                                   rate, naive, used, children)
    return results


def _typical(floors: list[float]) -> float:
    """A pattern's model and naive plan, in seconds: the mean of those timed so far, the
    first left out once there are others (it pays for warming caches up)."""
    timed = floors[1:] or floors
    return sum(timed) / len(timed)


def _check_floors(still: float, floors: list[float], solving: float, end: float,
                  patterns: int) -> None:
    """Refuse when the `still` floors to come cannot fit before `end`, even with the time
    the solvers took so far (a run without them would have had it). Judged once, from the
    median of the first `FLOOR_SAMPLE` floors or a twentieth of them: a pause (a garbage
    collection, the scheduler on a busy machine) in one of them does not decide; a
    workload of fewer than ten patterns overruns by milliseconds at most."""
    short = still * median(floors) - solving - (end - time.perf_counter())
    if short > 0:
        raise TimeLimitTooShort(f"give each of this workload's {patterns:,} patterns its "
                                "simplest plan", short)


def select(workload: Workload, results: Mapping[str, NodeResult]) -> dict[str, Candidate]:
    """Each root's cheapest plan within its latency bound, then top-down the plans it fixes
    for the nodes below (seed 002 §3.2.3)."""
    graph = detection_graph(workload)
    chosen: dict[str, Candidate] = {}
    problems = []
    for name in reversed(bottom_up_order(graph)):
        result = results[name]
        pattern = workload.pattern(name)
        bound = pattern.latency.max_steps if pattern.latency else None
        if name not in chosen:
            pick = cheapest_within(result.front, bound)
            if pick is None:
                fastest = min(c.latency for c in result.front)
                problems.append(Problem(
                    workload.path, f"patterns[{pattern.index}].latency",
                    f"no detection plan of {name} meets the latency bound of {bound} step(s); "
                    f"the smallest achievable latency is {fastest} step(s)"))
                continue
            chosen[name] = pick
        for var, child in result.children.items():
            plan = results[child].offered[chosen[name].choices[var]]
            if child not in chosen or plan.latency < chosen[child].latency:
                chosen[child] = plan
    if problems:
        raise InputError(problems)
    return chosen


def own_cost(result: NodeResult, plan: Candidate) -> float:
    """A chosen plan's expected cost with its complex subevents at full cost."""
    return evaluate(result.model, plan.steps, result.plain_options, plan.choices).cost
