"""From a workload and its statistics to the cost model's inputs (seed 002 §4, §5.2).

- A primitive operand's occurrence: its type's model (Poisson by default; Bernoulli or Markov
  when the statistics give one), thinned by the selectivity of its filters — filters are
  pushed down to the sources, so only qualifying events are ever transmitted (§5.2).
- A KLEENE operand occurs at its type's rate (b+ occurs whenever one b does).
- A negated operand is also thinned by the join predicates it takes part in: only events that
  would spoil a match need to be looked for.
- A complex operand is a Poisson process at the child pattern's derived occurrence rate.
- Join predicates among positive operands scale the partial events' probabilities.
- A partitioned pattern with keyed statistics gets its figures within its keys
  (`costmodels.keyed`: measured on the sample, else summed over the key profile).
A selectivity missing from the statistics counts as 1 (no reduction: the conservative
choice); a primitive type without a rate (and without a Bernoulli/Markov model) is an error.
A rate or selectivity measured 0 (or nearly) is planned at its floor (`floored`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from cepplan.costmodels import occurrence as occ
from cepplan.costmodels.keyed_acquisition import keyed_costs
from cepplan.costmodels.operators import OperandModel, PatternModel
from cepplan.errors import InputError, Problem
from cepplan.workload.model import FILTER, JOIN, Pattern, Statistics, Workload

ZERO_FLOOR = 1e-6  # the least selectivity planned, and least rate, relative to the highest


@dataclass(frozen=True)
class Floors:
    """The least rate and selectivity the planner plans with (`floored`)."""

    rate: float
    selectivity: float = ZERO_FLOOR


def floors(statistics: Statistics) -> Floors:
    """`ZERO_FLOOR` of a selectivity of 1 and of the highest rate."""
    return Floors(ZERO_FLOOR * max(statistics.rates.values(), default=1.0))


def floored(statistics: Statistics) -> Statistics:
    """The statistics with every rate and selectivity below its floor (`floors`) raised to
    it: a 0 means too rare to be seen, and at exactly 0 the plans tie (no event to pay
    for), so a plan chosen there would stop holding at any positive value."""
    least = floors(statistics)
    rates = {t: max(r, least.rate) for t, r in statistics.rates.items()}
    selectivities = {p: MappingProxyType({t: max(v, least.selectivity) for t, v in own.items()})
                     for p, own in statistics.selectivities.items()}
    return replace(statistics, rates=MappingProxyType(rates),
                   selectivities=MappingProxyType(selectivities))


@dataclass(frozen=True)
class ChildSummary:
    """What a parent needs to know of a complex subevent: its occurrence rate and window."""

    rate: float
    window: float


def check_rates(workload: Workload, statistics: Statistics, stats_file: str | None) -> None:
    """Raise an InputError naming every primitive type a pattern uses that has no rate."""
    used = sorted({o.event_type for p in workload.patterns for o in p.operands
                   if not o.is_complex})
    missing = [t for t in used if t not in statistics.rates
               and statistics.models.get(t) is None]
    missing += [t for t in used if t not in missing and t not in statistics.rates
                and statistics.models[t].kind == occ.POISSON]
    if missing:
        where = stats_file or workload.path
        raise InputError([Problem(
            where, "statistics.rates",
            f"no arrival rate for event type(s) {', '.join(sorted(missing))}: add them to the "
            "workload's inline statistics or measure them with `cepplan stats`")])


def selectivity(statistics: Statistics, pattern: Pattern, text: str) -> float:
    """The predicate's selectivity from the statistics, 1 when unknown."""
    return statistics.selectivities.get(pattern.name, {}).get(text, 1.0)


def pattern_model(workload: Workload, pattern: Pattern, statistics: Statistics,
                  children: Mapping[str, ChildSummary], step: float | None) -> PatternModel:
    """The cost model's view of one pattern."""
    operands = []
    keyed = statistics.keyed.get(pattern.name) if pattern.partition_by else None
    for operand in pattern.operands:
        kept = math.prod(selectivity(statistics, pattern, p.text) for p in pattern.predicates
                         if operand.var in p.variables
                         and (p.kind == FILTER or (operand.kind == "negated" and p.kind == JOIN)))
        if operand.is_complex:
            child = children[operand.event_type]
            model = occ.poisson(child.rate * kept, step)
            extra, source = child.window, ""
        elif keyed is not None and operand.event_type in statistics.rates:
            # within keys: the type's events at their rate (the whole stream's occurrence
            # model describes all keys merged, which a keyed pattern never sees)
            model = occ.poisson(statistics.rates[operand.event_type] * kept, step)
            extra, source = 0.0, _source(pattern, operand.var, operand.event_type)
        else:
            model = _primitive(statistics, operand.event_type, kept, step)
            extra, source = 0.0, _source(pattern, operand.var, operand.event_type)
        operands.append(OperandModel(operand.var, model, operand.position,
                                     operand.kind == "negated", extra, source,
                                     "" if operand.is_complex else operand.event_type, kept))
    negated = {o.var for o in pattern.negated}
    joins = tuple((frozenset(p.variables), selectivity(statistics, pattern, p.text))
                  for p in pattern.predicates
                  if p.kind == JOIN and not p.variables & negated)
    model = PatternModel(pattern.operator, pattern.window or 0.0, tuple(operands), joins)
    if keyed is None or pattern.operator == "OR":
        return model
    return replace(model, keyed=keyed_costs(model, keyed, statistics.rates))


def _source(pattern: Pattern, var: str, type_name: str) -> str:
    """What a primitive operand transmits: its type and its filters (with the variable name
    abstracted), so that `a:GOOG` and `b:GOOG` without filters share transmitted events."""
    own = re.compile(rf"\b{re.escape(var)}\.")
    filters = sorted(own.sub("$.", p.text) for p in pattern.filters(var))
    return "|".join([type_name, *filters])


def _primitive(statistics: Statistics, type_name: str, kept: float,
               step: float | None) -> occ.Occurrence:
    model = statistics.models.get(type_name)
    if model is not None and model.kind == occ.BERNOULLI:
        return occ.bernoulli(model.p, kept)
    if model is not None and model.kind == occ.MARKOV:
        return occ.markov_chain(model.transition, model.time_step, kept)
    return occ.poisson(statistics.rates[type_name] * kept, step)
