"""`optimize`: a whole workload's plan — hierarchical Pareto planning (seed 002 §3.2), shared
subevents (§5.1) — as the `Plan` written to `plan.json`."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from types import MappingProxyType

from cepplan.planner.candidates import Candidate
from cepplan.planner.compose import NodeResult, Settings, own_cost
from cepplan.planner.evaluation import NONE, EvaluationSettings, evaluation
from cepplan.planner.inputs import check_rates
from cepplan.planner.plan import DetectionPlan, PatternPlan, Plan
from cepplan.planner.shared import SharedOutcome, plan_workload
from cepplan.workload.model import Statistics, Workload

NO_SEARCH = EvaluationSettings(search=NONE)


@dataclass(frozen=True)
class Optimized:
    """The plan and the planning outcome behind it (for the terminal summary)."""

    plan: Plan
    outcome: SharedOutcome
    seconds: float


def optimize(workload: Workload, statistics: Statistics, settings: Settings,
             stats_file: str | None = None, share: bool = True,
             evaluation_settings: EvaluationSettings = NO_SEARCH,
             ) -> Optimized:
    """Plan every pattern of the workload; InputError for missing rates or unmeetable
    latency bounds. Then the evaluation pass: trees and shared subtrees (docs/sharing.md)."""
    start = time.perf_counter()
    check_rates(workload, statistics, stats_file)
    outcome = plan_workload(workload, statistics, settings, share)
    patterns = {}
    for pattern in workload.patterns:
        result = outcome.results[pattern.name]
        chosen = outcome.chosen[pattern.name]
        patterns[pattern.name] = PatternPlan(
            pattern.name, _detection(chosen, own_cost(result, chosen)),
            evaluation_order(result, chosen),
            tuple(_detection(c, own_cost(result, c)) for c in result.front),
            result.naive_cost, result.solver)
    seconds = time.perf_counter() - start
    provenance = {"solver": settings.solver, "seed": settings.seed, "seconds": round(seconds, 4),
                  "settings": asdict(settings), "statistics": stats_file or "inline",
                  "total_expected_cost": outcome.total,
                  "naive_total_cost": outcome.naive_total,
                  "independent_total_expected_cost": outcome.independent_total,
                  "shared_subevents": list(outcome.shared)}
    plan = Plan(MappingProxyType(patterns), workload.path, workload.digest,
                MappingProxyType(provenance))
    plan = evaluation(workload, statistics, plan, evaluation_settings)
    return Optimized(plan, outcome, time.perf_counter() - start)


def evaluation_order(result: NodeResult, chosen: Candidate) -> tuple[str, ...]:
    """The order the matcher joins variables in: step by step, by position within a step,
    negated variables last (they only veto matches)."""
    position = {o.var: (o.negated, o.position) for o in result.model.operands}
    order = [v for step in chosen.steps for v in sorted(step, key=lambda v: position[v])]
    return tuple(sorted(order, key=lambda v: position[v][0]))


def _detection(candidate: Candidate, cost: float) -> DetectionPlan:
    return DetectionPlan(candidate.steps, cost, candidate.latency)
