"""`optimize`: a whole workload's plan, made by one pipeline of passes (DESIGN.md, "The
optimizer: one pipeline of passes"), as the `Plan` written to `plan.json`.

    acquisition  per pattern, the multi-step detection plan (seed 002 §3.2, §5.1)
    contexts     which patterns run in which grouped context windows, each group planned
                 on its own (seed 003)
    evaluation   per pattern, the evaluation tree; subtrees patterns share (seed 004)
    covering     covering selections for consumer queries (seed 000)
    invariants   per statistic, the range within which the chosen plans stay the choice
                 (docs/planner.md, "When a plan stops holding"); the time the others left

Each pass is a function `(request, plan) -> plan` that fills its own section of the plan and
reads the sections before it; acquisition starts from nothing and also returns the outcome the
terminal summary reports. One deadline bounds them all: each pass ends by `request.deadline`,
an equal share of the time left among itself and the passes after it that have work
(`_has_work`), so time a pass does not use goes to the passes after it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from types import MappingProxyType

from cepplan.costmodels.count_spans import timed
from cepplan.costmodels.join_orders import JoinWork
from cepplan.planner.candidates import Candidate
from cepplan.planner.compose import NodeResult, Settings, own_cost
from cepplan.planner.contexts import plan_contexts
from cepplan.planner.covering_plan import CoveringSettings, covering_section
from cepplan.planner.deadline import share as share_of
from cepplan.planner.deadline import with_time_note
from cepplan.planner.engine_steps import (
    engine_steps,
    join_figures,
    positive_steps,
    priced_join_orders,
)
from cepplan.planner.evaluation import NONE, EvaluationSettings, evaluation
from cepplan.planner.inputs import check_rates, floored
from cepplan.planner.invariant_ranges import invariants_pass
from cepplan.planner.plan import DetectionPlan, PatternPlan, Plan
from cepplan.planner.shared import SharedOutcome, plan_workload
from cepplan.workload.model import Statistics, Workload

NO_SEARCH = EvaluationSettings(search=NONE)


@dataclass(frozen=True)
class PlanRequest:
    """What every pass reads: the workload, its statistics and each pass's settings."""

    workload: Workload
    statistics: Statistics
    settings: Settings
    stats_file: str | None = None
    share: bool = True
    evaluation: EvaluationSettings = NO_SEARCH
    covering: CoveringSettings = field(default_factory=CoveringSettings)
    deadline: float = math.inf  # perf_counter time by which the pass must end
    end: float = math.inf  # perf_counter time by which the whole run must end
    engine: str = "local"  # the engine that will run the plan (what its steps cost there)
    duration: float | None = None  # time units the statistics cover (None: unknown)


@dataclass(frozen=True)
class Optimized:
    """The plan and the planning outcome behind it (for the terminal summary)."""

    plan: Plan
    outcome: SharedOutcome
    seconds: float


def contexts_pass(request: PlanRequest, plan: Plan) -> Plan:
    """Grouped context windows and their workloads (`cepplan.planner.contexts`)."""
    return plan_contexts(request.workload, request.statistics, plan, request.settings,
                         request.stats_file, request.share, request.deadline, request.end)


def evaluation_pass(request: PlanRequest, plan: Plan) -> Plan:
    """Evaluation trees and shared subtrees (`cepplan.planner.evaluation`), searched in the
    time this pass has (at most the search's own limit); none when no time is left."""
    settings = request.evaluation
    budget = min(settings.time_limit, request.deadline - time.perf_counter())
    return evaluation(request.workload, request.statistics, plan, settings, budget)


def covering_pass(request: PlanRequest, plan: Plan) -> Plan:
    """Covering selections of consumer queries (`cepplan.planner.covering_plan`)."""
    section = covering_section(request.workload, request.statistics, request.covering,
                               request.deadline)
    return replace(plan, covering=MappingProxyType(section))


PASSES: tuple[Callable[[PlanRequest, Plan], Plan], ...] = (
    contexts_pass, evaluation_pass, covering_pass, invariants_pass)


def _has_work(run_pass: Callable[[PlanRequest, Plan], Plan], request: PlanRequest) -> bool:
    """Whether a pass will spend time on this request (the others return at once; a search
    over one pattern has nothing to share and ends in milliseconds; the invariants take what
    the others leave, and no share of theirs)."""
    if run_pass is invariants_pass:
        return False
    if run_pass is contexts_pass:
        return request.workload.contexts is not None
    if run_pass is evaluation_pass:
        return request.evaluation.search != NONE and len(request.workload.patterns) > 1
    consumers = request.workload.consumers
    return consumers is not None and bool(consumers.queries)


def optimize(workload: Workload, statistics: Statistics, settings: Settings,
             stats_file: str | None = None, share: bool = True,
             evaluation_settings: EvaluationSettings = NO_SEARCH,
             covering: CoveringSettings | None = None, engine: str = "local",
             duration: float | None = None, deadline: float | None = None,
             invariants: bool = True) -> Optimized:
    """Plan the workload: acquisition, then every pass of `PASSES` in order (the invariants
    pass only if `invariants`: a plan only compared, never run, needs none), all ended by
    `deadline` (`time.perf_counter()` time; default: the time limit from now); InputError for
    missing rates or unmeetable latency bounds, TimeLimitTooShort when not even every
    pattern's one-step plan fits."""
    start = time.perf_counter()
    end = start + settings.time_limit if deadline is None else deadline
    workload = timed(workload, statistics)  # count windows planned as their time span
    request = PlanRequest(workload, floored(statistics), settings, stats_file, share,
                          evaluation_settings, covering or CoveringSettings(), end=end,
                          engine=engine, duration=duration)
    later = sum(_has_work(run_pass, request) for run_pass in PASSES)
    plan, outcome = acquisition(replace(request, deadline=share_of(end, 1 + later)))
    for run_pass in (p for p in PASSES if invariants or p is not invariants_pass):
        later -= _has_work(run_pass, request)
        plan = run_pass(replace(request, deadline=share_of(end, 1 + later)), plan)
    return Optimized(plan, outcome, time.perf_counter() - start)


def acquisition(request: PlanRequest) -> tuple[Plan, SharedOutcome]:
    """Every pattern's Pareto-optimal detection plans and the chosen one (seed 002 §3.2),
    with shared subevents (§5.1) unless `share` is off."""
    start = time.perf_counter()
    workload, settings = request.workload, request.settings
    check_rates(workload, request.statistics, request.stats_file)
    outcome = plan_workload(workload, request.statistics, settings, request.share,
                            request.deadline, request.end)
    outcome, steps = engine_steps(workload, outcome, request.engine, request.duration)
    priced, unpriced = priced_join_orders(workload, request.statistics, outcome,
                                          request.deadline)
    steps["join_orders"] = {name: join_figures(work) for name, work in priced.items()}
    patterns = {}
    for pattern in workload.patterns:
        result = outcome.results[pattern.name]
        chosen = outcome.chosen[pattern.name]
        patterns[pattern.name] = PatternPlan(
            pattern.name, _detection(chosen, own_cost(result, chosen)),
            evaluation_order(result, chosen, priced.get(pattern.name)),
            tuple(_detection(c, own_cost(result, c)) for c in offered(result.front, chosen)),
            result.naive_cost, result.solver)
    provenance = {"solver": settings.solver, "seed": settings.seed,
                  "seconds": round(time.perf_counter() - start, 4),
                  "settings": asdict(settings), "statistics": request.stats_file or "inline",
                  "total_expected_cost": outcome.total,
                  "naive_total_cost": outcome.naive_total,
                  "independent_total_expected_cost": outcome.independent_total,
                  "shared_subevents": list(outcome.shared), "engine_steps": steps}
    plan = Plan(MappingProxyType(patterns), workload.path, workload.digest,
                MappingProxyType(provenance))
    if unpriced:
        plan = with_time_note(plan, f"join orders: {unpriced:,} of {len(patterns):,} patterns "
                              "not priced in time: their variables are joined in position order")
    return plan, outcome


def evaluation_order(result: NodeResult, chosen: Candidate,
                     priced: JoinWork | None = None) -> tuple[str, ...]:
    """The order the matcher joins variables in: step by step, negated variables last (they
    only veto matches); within a step the `priced` order whose look-ups read the fewest rows,
    by position where the pattern is not priced (OR, complex events, the time limit)."""
    negated = sorted((o.position, o.var) for o in result.model.operands if o.negated)
    if priced is None:
        order = tuple(v for step in positive_steps(result, chosen) for v in step)
    else:
        order = priced.order
    return (*order, *(var for _, var in negated))


def offered(front: Sequence[Candidate], chosen: Candidate) -> list[Candidate]:
    """The plans plan.json lists for a pattern: its front in events, and the chosen plan
    where the engine's step prices chose a one-step plan the front does not hold (by
    latency, so a reader finds it among the plans it was chosen over)."""
    if any(c.steps == chosen.steps for c in front):
        return list(front)
    return sorted([*front, chosen], key=lambda c: (c.latency, -c.cost))


def _detection(candidate: Candidate, cost: float) -> DetectionPlan:
    return DetectionPlan(candidate.steps, cost, candidate.latency)
