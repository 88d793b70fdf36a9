"""The invariants pass: for every statistic a plan depends on, the range within which the
chosen detection plans stay the planner's choice (docs/planner.md, "When a plan stops
holding"; the invariant-based adaptation that seed 004 §6.2.3 cites).

One statistic at a time, the others at their measured value: its value is scaled up and down
by multiplicative bisection in log space until the choice changes, each probe re-planning only
the patterns the statistic can change (their detection-graph component) by the acquisition's
own steps. Beyond `MAX_FACTOR` either way the side is unbounded (null). A probe the time
limit cuts short leaves the range the probes so far proved.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from cepplan.errors import InputError
from cepplan.planner.compose import Settings
from cepplan.planner.contexts import group_workload
from cepplan.planner.deadline import TimeLimitTooShort, with_time_note
from cepplan.planner.engine_steps import engine_steps
from cepplan.planner.inputs import selectivity
from cepplan.planner.plan import Plan
from cepplan.planner.shared import plan_workload
from cepplan.workload.model import FILTER, JOIN, Statistics, Workload

MAX_FACTOR = 1000.0  # scaled further than this either way, a side is unbounded
PRECISION = 1.02  # a bound is within this factor of where the plan stops holding
RATE, SELECTIVITY = "rate", "selectivity"


@dataclass(frozen=True)
class Statistic:
    """One statistic a plan depends on: a type's rate or a pattern's predicate selectivity,
    its measured value and the patterns whose plans it can change."""

    kind: str  # RATE or SELECTIVITY
    key: tuple[str, ...]  # (type,) or (pattern, predicate text)
    basis: float
    patterns: frozenset[str]

    def at(self, statistics: Statistics, value: float) -> Statistics:
        """The statistics with this one at `value`."""
        if self.kind == RATE:
            return replace(statistics, rates=MappingProxyType({**statistics.rates,
                                                               self.key[0]: value}))
        pattern, text = self.key
        own = {**statistics.selectivities.get(pattern, {}), text: value}
        return replace(statistics, selectivities=MappingProxyType(
            {**statistics.selectivities, pattern: MappingProxyType(own)}))


@dataclass(frozen=True)
class Derivation:
    """What probing needs: the workload, its statistics, the acquisition's settings and the
    steps each pattern's plan has."""

    workload: Workload
    statistics: Statistics
    settings: Settings
    share: bool
    engine: str
    duration: float | None
    steps: Mapping[str, tuple[frozenset[str], ...]]
    deadline: float


class OutOfTime(Exception):
    """The time limit ended a derivation; the ranges proved so far stand."""


def invariants_pass(request: Any, plan: Plan) -> Plan:
    """The plan with its `invariants` section (`request`: the optimizer's PlanRequest)."""
    derivation = Derivation(request.workload, request.statistics, request.settings,
                            request.share, request.engine, request.duration,
                            {n: p.detection.steps for n, p in plan.patterns.items()},
                            request.deadline)
    section, unfinished = invariants_section(derivation, plan.sharing)
    plan = replace(plan, invariants=MappingProxyType(section))
    if unfinished:
        plan = with_time_note(plan, f"invariants: {unfinished} statistic(s) not analysed in "
                                    "time hold only at their measured value")
    return plan


def invariants_section(derivation: Derivation,
                       sharing: Mapping[str, Any] | None) -> tuple[dict[str, Any], int]:
    """(plan.json's `invariants`, how many statistics the time limit left unanalysed)."""
    statistics = depends_on(derivation.workload, derivation.statistics)
    rates: dict[str, dict] = {}
    selectivities: dict[str, dict[str, dict]] = {}
    unfinished = 0
    for statistic in statistics:
        try:
            low, high = holding_range(derivation, statistic)
        except OutOfTime as stopped:
            low, high = stopped.args[0] if stopped.args else (statistic.basis, statistic.basis)
            unfinished += 1
        bounds = {"low": low, "high": high}
        if statistic.kind == RATE:
            rates[statistic.key[0]] = bounds
        else:
            selectivities.setdefault(statistic.key[0], {})[statistic.key[1]] = bounds
    basis_rates = {s.key[0]: s.basis for s in statistics if s.kind == RATE}
    basis_selectivities: dict[str, dict[str, float]] = {}
    for s in statistics:
        if s.kind == SELECTIVITY:
            basis_selectivities.setdefault(s.key[0], {})[s.key[1]] = s.basis
    section = {"basis": {"rates": basis_rates, "selectivities": basis_selectivities},
               "rates": rates, "selectivities": selectivities,
               "search_margin": search_margin(sharing),
               "time_unit": derivation.workload.time_unit}
    return section, unfinished


def depends_on(workload: Workload, statistics: Statistics) -> list[Statistic]:
    """The rates of the primitive types patterns bind (those with a Bernoulli or Markov model
    excepted: the planner does not read their rate) and the selectivity of every filter and
    join predicate (1 where the statistics have none: what the planner assumed)."""
    component = components(workload)
    users: dict[str, set[str]] = {}
    for pattern in workload.patterns:
        for operand in pattern.operands:
            if not operand.is_complex and operand.event_type not in statistics.models:
                users.setdefault(operand.event_type, set()).update(component[pattern.name])
    found = [Statistic(RATE, (t,), statistics.rates[t], frozenset(names))
             for t, names in users.items() if t in statistics.rates]
    for pattern in workload.patterns:
        for predicate in pattern.predicates:
            if predicate.kind in (FILTER, JOIN):
                found.append(Statistic(SELECTIVITY, (pattern.name, predicate.text),
                                       selectivity(statistics, pattern, predicate.text),
                                       component[pattern.name]))
    return found


def components(workload: Workload) -> dict[str, frozenset[str]]:
    """Per pattern, the patterns planned together with it: those it binds or is bound by,
    transitively (a statistic that changes one may change the plans of all)."""
    linked: dict[str, set[str]] = {p.name: {p.name} for p in workload.patterns}
    for pattern in workload.patterns:
        for operand in pattern.operands:
            if operand.is_complex:
                merged = linked[pattern.name] | linked[operand.event_type]
                for name in merged:
                    linked[name] = merged
    return {name: frozenset(group) for name, group in linked.items()}


def holding_range(derivation: Derivation,
                  statistic: Statistic) -> tuple[float | None, float | None]:
    """(low, high) of the values at which every plan `statistic` can change keeps its steps;
    OutOfTime carries the range proved before the deadline."""
    basis = statistic.basis
    if basis <= 0:  # nothing to scale: the plan is known to hold at this value only
        return basis, basis

    def holds(factor: float) -> bool:
        return keeps_steps(derivation, statistic, basis * factor)

    ceiling = MAX_FACTOR if statistic.kind == RATE else min(MAX_FACTOR, 1.0 / basis)
    try:
        low = _bound(holds, basis, 1.0 / MAX_FACTOR)
    except OutOfTime as stopped:
        raise OutOfTime((stopped.args[0], basis)) from None
    try:
        high = _bound(holds, basis, ceiling) if ceiling > 1.0 else None
    except OutOfTime as stopped:
        raise OutOfTime((low, stopped.args[0])) from None
    return low, high


def _bound(holds: Callable[[float], bool], basis: float, limit: float) -> float | None:
    """The farthest value towards `limit` (a factor of `basis`) proved to hold, to within
    `PRECISION`; None when it holds at the limit."""
    inside, outside = 1.0, limit
    try:
        if holds(limit):
            return None
        while abs(math.log(outside / inside)) > math.log(PRECISION):
            middle = math.sqrt(inside * outside)
            if holds(middle):
                inside = middle
            else:
                outside = middle
    except OutOfTime:
        raise OutOfTime(basis * inside) from None
    return basis * inside


def keeps_steps(derivation: Derivation, statistic: Statistic, value: float) -> bool:
    """Whether, with `statistic` at `value`, acquisition would give every pattern it can
    change the steps the plan has (re-planning only those patterns, by the planner's own
    steps: Pareto fronts, the choice within latency bounds, the engine's step check)."""
    if time.perf_counter() > derivation.deadline:
        raise OutOfTime()
    workload = group_workload(derivation.workload, sorted(statistic.patterns))
    statistics = statistic.at(derivation.statistics, value)
    try:
        outcome = plan_workload(workload, statistics, derivation.settings, derivation.share,
                                derivation.deadline, derivation.deadline)
    except InputError:  # no plan meets a latency bound there: the plan does not hold
        return False
    except TimeLimitTooShort:
        raise OutOfTime() from None
    outcome, _ = engine_steps(workload, outcome, derivation.engine, derivation.duration)
    return all(outcome.chosen[name].steps == derivation.steps[name]
               for name in statistic.patterns)


def search_margin(sharing: Mapping[str, Any] | None) -> float | None:
    """How much costlier, relatively, the next cheapest multi-pattern plan the evaluation
    search priced is than the chosen one (the search's earlier best plans and its
    baselines); None when no search ran or it priced nothing costlier."""
    if not sharing or "modelled_cost" not in sharing:
        return None
    costs = sharing["modelled_cost"]
    chosen = costs.get("chosen")
    if not chosen or chosen <= 0:
        return None
    others = [c for name, c in costs.items() if name != "chosen" and c is not None]
    others += [point[1] for point in sharing.get("trace") or ()]
    costlier = [c for c in others if c > chosen * (1 + 1e-9)]
    return min(costlier) / chosen - 1.0 if costlier else None
