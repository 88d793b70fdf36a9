"""The workload's `statistics` section and `stats.json` (the same shape) checked and built:
rates, selectivities and occurrence models, each value out of range reported with its place."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any

from cepplan.workload.durations import DurationError, parse_duration
from cepplan.workload.model import EventType, OccurrenceModel, Pattern, Statistics

MAX_RATE = 1e12  # events per time unit; with MAX_DURATION windows the cost models stay finite


def read_statistics(spec: Mapping[str, Any], event_types: Mapping[str, EventType],
                    patterns: Mapping[str, Pattern], time_unit: str, error,
                    path: tuple = (), declared: Collection[str] = ()) -> Statistics:
    """Check and build statistics (inline, or from `stats.json`, which has the same shape).

    `error(path, message)` receives each problem; values out of range are problems. Entries of
    `declared` patterns that failed to build are skipped: their own error already says why.
    """
    rates = {}
    for name, rate in spec.get("rates", {}).items():
        if name not in event_types:
            error((*path, "rates", name), f"unknown event type {name!r}")
        elif not (isinstance(rate, (int, float)) and 0 <= rate <= MAX_RATE):
            error((*path, "rates", name), f"a rate must be a finite number >= 0 and at most "
                  f"{MAX_RATE:g} events per {time_unit}, got {rate!r:.40}")
        else:
            rates[name] = float(rate)
    selectivities = {}
    for name, entries in spec.get("selectivities", {}).items():
        pattern = patterns.get(name)
        if pattern is None:
            if name not in declared:
                error((*path, "selectivities", name), f"unknown pattern {name!r}")
            continue
        texts = {p.text for p in pattern.predicates}
        checked = {}
        for text, value in entries.items():
            where = (*path, "selectivities", name, text)
            if text not in texts:
                error(where, f"{name} has no predicate written {text!r}")
            elif not 0 <= value <= 1:
                error(where, f"a selectivity must be in [0, 1], got {value}")
            else:
                checked[text] = float(value)
        selectivities[name] = MappingProxyType(checked)
    models = {}
    for name, model in spec.get("models", {}).items():
        where = (*path, "models", name)
        if name not in event_types:
            error(where, f"unknown event type {name!r}")
            continue
        built = _occurrence_model(model, time_unit, error, where)
        if built is not None:
            models[name] = built
    return Statistics(MappingProxyType(rates), MappingProxyType(selectivities),
                      MappingProxyType(models))


def _occurrence_model(model: Mapping[str, Any], time_unit: str, error,
                      where: tuple) -> OccurrenceModel | None:
    kind = model["kind"]
    if kind == "poisson":
        return OccurrenceModel("poisson")
    if kind == "bernoulli":
        p = model.get("p")
        if p is None or not 0 <= p <= 1:
            error((*where, "p"), f"a Bernoulli model needs p in [0, 1], got {p}")
            return None
        return OccurrenceModel("bernoulli", p=float(p))
    order = model.get("order")
    if order is None or not 1 <= order <= 8:
        error((*where, "order"), f"a Markov model needs an order from 1 to 8, got {order}")
        return None
    try:
        step = parse_duration(model.get("time_step", 1), time_unit)
    except DurationError as err:
        error((*where, "time_step"), str(err))
        return None
    matrix = model.get("transition")
    if matrix is None or len(matrix) != 2**order:
        error((*where, "transition"), f"an order-{order} chain needs {2**order} rows "
              "(one per state of the last m steps)")
        return None
    for row_index, row in enumerate(matrix):
        ok = len(row) == 2 and all(0 <= v <= 1 for v in row) and abs(sum(row) - 1) < 1e-6
        if not ok:
            error((*where, "transition", row_index), "each row is [P(no event), P(event)]: two "
                  f"probabilities summing to 1, got {row}")
            return None
    return OccurrenceModel("markov", order=order, time_step=step,
                           transition=tuple((float(a), float(b)) for a, b in matrix))


def merge_statistics(base: Statistics, override: Statistics) -> Statistics:
    """`override`'s entries win over `base`'s, per type and per predicate."""
    selectivities = {k: dict(v) for k, v in base.selectivities.items()}
    for pattern, entries in override.selectivities.items():
        selectivities.setdefault(pattern, {}).update(entries)
    return Statistics(
        rates=MappingProxyType({**base.rates, **override.rates}),
        selectivities=MappingProxyType({k: MappingProxyType(v) for k, v in selectivities.items()}),
        models=MappingProxyType({**base.models, **override.models}),
        keyed=MappingProxyType({**base.keyed, **override.keyed}),
    )
