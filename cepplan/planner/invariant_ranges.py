"""The invariants pass: for every statistic a plan depends on, the range within which the
chosen detection plans stay the planner's choice (docs/planner.md, "When a plan stops
holding"; the invariant-based adaptation that seed 004 §6.2.3 cites).

One statistic at a time, the others at their measured value: its value is scaled up and down
by multiplicative bisection in log space until the choice changes. A probe re-plans the
patterns planned together that the statistic can change (a unit: one pattern, or a whole
detection-graph component) with the acquisition's own steps; the units are taken in turn,
each bisected only below the bound the ones before proved. For a pattern planned alone by the
exact DP, pricing other plans of it first (its recorded front, the plans re-plans chose
instead) can prove a change without the DP. Beyond `MAX_FACTOR` either way a side is
unbounded (null); a statistic measured 0 is planned, and probed, from its floor
(`inputs.floored`). Once the time limit is reached, what is not proved holds at its basis only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from cepplan.costmodels.engine_steps import ENGINE_COSTS
from cepplan.costmodels.occurrence import POISSON
from cepplan.costmodels.operators import OR
from cepplan.errors import InputError
from cepplan.planner.candidates import Option, cheaper, evaluate
from cepplan.planner.compose import Settings
from cepplan.planner.contexts import group_workload
from cepplan.planner.deadline import TimeLimitTooShort, with_time_note
from cepplan.planner.engine_steps import engine_steps, saving
from cepplan.planner.front import DP
from cepplan.planner.inputs import ZERO_FLOOR, floors, pattern_model, selectivity
from cepplan.planner.plan import Plan
from cepplan.planner.shared import plan_workload
from cepplan.workload.model import FILTER, JOIN, Pattern, Statistics, Workload

MAX_FACTOR = 1000.0  # scaled further than this either way, a side is unbounded
PRECISION = 1.02  # a bound is within this factor of where the plan stops holding
LADDER = 4.0  # a side is tested every factor of 4 up to its limit (plans can change back)
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
    priced: Mapping[str, PricedPattern] = field(default_factory=dict)
    linked: Mapping[str, frozenset[str]] = field(default_factory=dict)  # `components`
    # each unit's workload, built once for all the probes of it
    unit_workloads: dict[frozenset[str], Workload] = field(default_factory=dict)

    def unit_workload(self, names: frozenset[str]) -> Workload:
        """The workload of the patterns `names` plan together (`group_workload`)."""
        if names not in self.unit_workloads:
            self.unit_workloads[names] = group_workload(self.workload, sorted(names))
        return self.unit_workloads[names]


@dataclass(frozen=True)
class PricedPattern:
    """A multi-step plan of a pattern planned alone by the exact DP, with other plans of it:
    priced under drifted statistics, one of them cheaper within the latency bound, or the
    one-step plan cheaper in time on the engine, proves the plan changes without re-running
    the DP. The other plans are those of its recorded Pareto front and each plan a re-plan
    chose instead of it (the runner-up within its latency is not on the front)."""

    pattern: Pattern
    chosen: tuple[frozenset[str], ...]
    # the front's other plans, then each plan a re-plan chose instead (learnt while probing)
    others: dict[tuple[frozenset[str], ...], None]

    def surely_changes(self, derivation: Derivation, statistics: Statistics) -> bool:
        """Whether the planner surely would not keep the chosen plan under `statistics`."""
        model = pattern_model(derivation.workload, self.pattern, statistics, {},
                              derivation.settings.step)
        options = {o.var: [Option(o.occurrence.rate, 1)] for o in model.operands}
        first = {var: 0 for var in options}
        chosen = evaluate(model, self.chosen, options, first)
        single = evaluate(model, (frozenset(options),), options, first)
        rates = {var: option[0].cost for var, option in options.items()}
        if saving(ENGINE_COSTS[derivation.engine], model, chosen, single, rates) <= 0:
            return True
        bound = self.pattern.latency.max_steps if self.pattern.latency else None
        return any(cheaper(c.cost, chosen.cost)
                   for c in (evaluate(model, steps, options, first) for steps in self.others)
                   if bound is None or c.latency <= bound)


def priced_patterns(workload: Workload, plan: Plan) -> dict[str, PricedPattern]:
    """The patterns whose drift pricing can prove: planned alone, by the DP (exact), over
    distinct sources (the DP's costs are then the plans' own), with a multi-step plan."""
    linked = components(workload)
    found = {}
    for pattern in workload.patterns:
        planned = plan.patterns.get(pattern.name)
        if (planned is None or linked[pattern.name] != {pattern.name} or planned.solver != DP
                or len(planned.detection.steps) < 2 or pattern.operator == OR
                or _shares_types(pattern)):
            continue
        others = dict.fromkeys(p.steps for p in planned.pareto
                               if p.steps != planned.detection.steps)
        found[pattern.name] = PricedPattern(pattern, planned.detection.steps, others)
    return found


def _shares_types(pattern: Pattern) -> bool:
    """Whether two positive variables are bound to the same event type (they may share
    transmissions, and the DP then optimises an upper bound of the cost)."""
    types = [o.event_type for o in pattern.positive]
    return len(types) != len(set(types))


class OutOfTime(Exception):
    """The time limit ended a derivation; the ranges proved so far stand."""


def invariants_pass(request: Any, plan: Plan) -> Plan:
    """The plan with its `invariants` section (`request`: the optimizer's PlanRequest)."""
    derivation = Derivation(request.workload, request.statistics, request.settings,
                            request.share, request.engine, request.duration,
                            {n: p.detection.steps for n, p in plan.patterns.items()},
                            request.deadline, priced_patterns(request.workload, plan),
                            components(request.workload))
    section, unfinished = invariants_section(derivation, plan.sharing)
    plan = replace(plan, invariants=MappingProxyType(section))
    if unfinished:
        every = len(section["rates"]) + sum(map(len, section["selectivities"].values()))
        plan = with_time_note(plan, f"invariants: {unfinished} of {every} statistics not "
                                    "analysed in time: re-planning treats any change of "
                                    "them as a change of the plan's choice")
    return plan


def invariants_section(derivation: Derivation,
                       sharing: Mapping[str, Any] | None) -> tuple[dict[str, Any], int]:
    """(plan.json's `invariants`, how many statistics the time limit left unanalysed)."""
    statistics = depends_on(derivation.workload, derivation.statistics)
    rates: dict[str, dict] = {}
    selectivities: dict[str, dict[str, dict]] = {}
    unfinished = 0
    for statistic in statistics:
        low = high = statistic.basis  # all that is known of it once the time is up
        if unfinished:
            unfinished += 1
        else:
            try:
                low, high = holding_range(derivation, statistic)
            except OutOfTime as stopped:
                (low, high), unfinished = stopped.args[0], 1
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
    """The rates of the primitive types patterns bind, where the planner reads them (a type
    with a Bernoulli or Markov model is planned by its model, except within the keys of a
    keyed pattern), and the selectivity of every filter and join predicate (1 where the
    statistics have none: what the planner assumed)."""
    component = components(workload)
    users: dict[str, set[str]] = {}
    for pattern in workload.patterns:
        keyed = bool(pattern.partition_by) and pattern.name in statistics.keyed
        for operand in pattern.operands:
            model = statistics.models.get(operand.event_type)
            if not operand.is_complex and (keyed or model is None or model.kind == POISSON):
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
    OutOfTime carries the range proved before the deadline. The planner plans a value below
    the statistic's floor at the floor (`inputs.floored`): no lower bound is below it, and a
    basis at the floor (measured 0) is probed up to `MAX_FACTOR` times the highest rate (the
    rare type may become the most frequent: probed only up to the highest, a plan changing just
    above it went unbounded) or a selectivity of 1."""
    basis = statistic.basis
    floor = getattr(floors(derivation.statistics), statistic.kind)
    reach = MAX_FACTOR / ZERO_FLOOR if basis <= floor else MAX_FACTOR
    ceiling = reach if statistic.kind == RATE else min(reach, 1.0 / basis)
    try:
        low = _side(derivation, statistic, max(1.0 / MAX_FACTOR, floor / basis)) \
            if basis > floor else None
    except OutOfTime:
        raise OutOfTime((basis, basis)) from None
    try:
        high = _side(derivation, statistic, ceiling) if ceiling > 1.0 else None
    except OutOfTime:
        raise OutOfTime((low, basis)) from None
    return low, high


def _side(derivation: Derivation, statistic: Statistic, limit: float) -> float | None:
    """The bound towards `limit` (a factor of the basis), None when every plan holds there.
    The patterns planned together (a unit) are taken in turn, each tested at the steps of
    `ladder` up to the bound the units before proved, and bisected below the first step
    where it fails. A plan may change and change back as one statistic grows (a hierarchy's
    parent: one plan at 12-300x a rate, the first again at 1000x), so the far end alone
    does not prove the range."""
    reach, bounded = limit, False
    for unit in dict.fromkeys(derivation.linked[name] for name in sorted(statistic.patterns)):
        probe = _Probe(derivation, statistic, unit)
        failing = next((step for step in ladder(reach) if not probe.holds(step)), None)
        if failing is None:
            continue
        reach, bounded = probe.bound(failing), True
    return statistic.basis * reach if bounded else None


def ladder(limit: float) -> list[float]:
    """Factors from 1 towards `limit`, `LADDER` apart, ending at `limit`."""
    steps, step = [], LADDER if limit > 1.0 else 1.0 / LADDER
    factor = step
    while abs(math.log(factor)) < abs(math.log(limit)):
        steps.append(factor)
        factor *= step
    return [*steps, limit]


@dataclass(frozen=True)
class _Probe:
    """Whether one unit keeps its plans with the statistic scaled by a factor."""

    derivation: Derivation
    statistic: Statistic
    unit: frozenset[str]

    def at(self, factor: float) -> Statistics:
        if time.perf_counter() > self.derivation.deadline:
            raise OutOfTime()
        return self.statistic.at(self.derivation.statistics, self.statistic.basis * factor)

    @property
    def priced(self) -> PricedPattern | None:
        (name, *more) = self.unit
        return None if more else self.derivation.priced.get(name)

    def replanned(self, factor: float) -> bool:
        return keeps_steps(self.derivation, self.unit, self.at(factor))

    def priced_holds(self, factor: float) -> bool:
        priced = self.priced
        return priced is None or not priced.surely_changes(self.derivation, self.at(factor))

    def holds(self, factor: float) -> bool:
        return self.priced_holds(factor) and self.replanned(factor)

    def bound(self, outside: float) -> float:
        """The farthest factor proved to hold towards `outside`, where the unit does not.
        A priced pattern is bisected by pricing alone, the DP then checking the bound found
        (a plan it chooses instead is priced from then on); a unit that pricing cannot
        settle is bisected by re-planning."""
        while self.priced is not None:
            inside = _bound(self.priced_holds, outside)
            if inside == 1.0 or self.replanned(inside):
                return inside
            if self.priced_holds(inside):  # pricing does not see what the DP chose
                return _bound(self.replanned, inside)
            outside = inside
        return _bound(self.holds, outside)


def _bound(holds: Callable[[float], bool], outside: float) -> float:
    """The factor towards `outside`, where the plan is known not to hold, farthest from 1
    proved to hold, to within `PRECISION` (by bisection in log space)."""
    inside = 1.0
    while abs(math.log(outside / inside)) > math.log(PRECISION):
        middle = math.sqrt(inside * outside)
        if holds(middle):
            inside = middle
        else:
            outside = middle
    return inside


def keeps_steps(derivation: Derivation, names: frozenset[str] | set[str],
                statistics: Statistics) -> bool:
    """Whether, under `statistics`, acquisition would give the patterns `names` the steps
    the plan has (re-planning only them, by the planner's own steps: Pareto fronts, the
    choice within latency bounds, the engine's step check)."""
    if not names:
        return True
    if time.perf_counter() > derivation.deadline:
        raise OutOfTime()
    workload = derivation.unit_workload(frozenset(names))
    try:
        outcome = plan_workload(workload, statistics, derivation.settings, derivation.share,
                                derivation.deadline, derivation.deadline)
    except InputError:  # no plan meets a latency bound there: the plan does not hold
        return False
    except TimeLimitTooShort:
        raise OutOfTime() from None
    acquired = outcome.chosen
    outcome, _ = engine_steps(workload, outcome, derivation.engine, derivation.duration)
    changed = [name for name in names if outcome.chosen[name].steps != derivation.steps[name]]
    for name in changed:  # what was chosen instead, before and after the engine's check
        if name in derivation.priced:
            others = derivation.priced[name].others
            others.update(dict.fromkeys((acquired[name].steps, outcome.chosen[name].steps)))
    return not changed


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
