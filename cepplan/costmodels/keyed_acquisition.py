"""The acquisition model of a partitioned pattern within its keys (`costmodels.keyed`):
the share of each variable's events a plan pulls, summed over the key profile's classes with
each key the unkeyed model at its own rates, or measured within keys on the sample."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from cepplan.costmodels import occurrence as occ
from cepplan.costmodels.keyed import (
    FORMULA_VARIABLES,
    MEASURED,
    PROFILE,
    KeyClass,
    KeyedCosts,
    key_classes,
    measured_factors,
    profile_factors,
)
from cepplan.costmodels.operators import PatternModel, monitoring_interval, reachability
from cepplan.workload.model import KeyedStatistics


def per_key_occurrence(model: occ.Occurrence, type_rate: float, total_rate: float,
                       step: float | None) -> occ.Occurrence:
    """An operand's occurrence within one key: Poisson at the key's rate of its type, thinned
    as the operand's own model is (`total_rate`: the type's rate over all keys)."""
    share = model.rate / total_rate if total_rate > 0 else 0.0
    return occ.poisson(type_rate * share, step if model.kind == occ.POISSON else None)


def formula_pulled(model: PatternModel, classes: Sequence[KeyClass],
                   totals: Mapping[str, float],
                   keys: int) -> dict[str, dict[frozenset[str], float]]:
    """f_e(U) from the key profile (the module's formula) for every positive variable and set
    of other positive variables, and for each negated variable after all positives. `model`
    is the unkeyed `PatternModel`; `totals` each primitive type's rate over all keys."""
    positives = [o.var for o in model.positives]
    if not classes or len(positives) > FORMULA_VARIABLES:
        return {}
    per_class = [(c.keys, _class_model(model, c, totals, keys)) for c in classes]
    everything = frozenset(positives)
    wanted = [(o.var, frozenset(u)) for o in model.positives
              for r in range(1, len(positives))
              for u in itertools.combinations([v for v in positives if v != o.var], r)]
    wanted += [(o.var, everything) for o in model.negatives]
    out: dict[str, dict[frozenset[str], float]] = {}
    for var, earlier in wanted:
        mass = sum(w * m.operand(var).occurrence.rate for w, m in per_class)
        if mass <= 0:
            continue
        pulled = sum(w * m.operand(var).occurrence.rate * reachability(m, earlier)
                     * monitoring_interval(m, var, earlier) for w, m in per_class)
        out.setdefault(var, {})[earlier] = pulled / mass
    return out


def _class_model(model: PatternModel, key_class: KeyClass, totals: Mapping[str, float],
                 keys: int) -> PatternModel:
    """The pattern's model within one key of the class: each primitive operand Poisson at the
    key's rate; a complex operand's occurrences spread evenly over the keys."""
    operands = []
    for operand in model.operands:
        if operand.event_type:
            rate = key_class.rates.get(operand.event_type, 0.0)
            found = per_key_occurrence(operand.occurrence, rate,
                                       totals.get(operand.event_type, 0.0),
                                       operand.occurrence.step)
        else:
            found = occ.poisson(operand.occurrence.rate / max(1, keys), operand.occurrence.step)
        operands.append(replace(operand, occurrence=found))
    return replace(model, operands=tuple(operands), keyed=None)


def keyed_costs(model: PatternModel, stats: KeyedStatistics,
                totals: Mapping[str, float]) -> KeyedCosts:
    """A partitioned pattern's `KeyedCosts` from its `KeyedStatistics`: the measured shares
    and factors where the sample gave them, the key profile's formulas for the rest.
    `model` is the unkeyed `PatternModel`, `totals` each type's rate over all keys."""
    classes = key_classes(stats.classes, stats.span)
    pulled = formula_pulled(model, classes, totals, stats.keys)
    for var, shares in stats.coverage.items():
        pulled.setdefault(var, {}).update(shares)
    rates = {o.var: o.occurrence.rate for o in model.positives}
    kept = {o.var: (o.event_type, o.selectivity) for o in model.positives if o.event_type}
    factors = profile_factors(classes, kept, model.window, {})
    factors.update(measured_factors(stats.tuples, model.window, rates, model.operator == "SEQ"))
    source = MEASURED if stats.coverage else PROFILE
    return KeyedCosts(MappingProxyType({v: MappingProxyType(s) for v, s in pulled.items()}),
                      MappingProxyType(factors), source)
