"""Synthetic event streams with known parameters: the ground truth the statistics job must recover.

Per-type Poisson rates follow a Zipf law over the types (seed 002 §6.1: frequencies Zipfian with
skew 0.255, arrivals exponential, i.e. a Poisson process); a type with a Bernoulli or Markov
occurrence model (seed 002 §4, §4.2) instead has at most one event per time step, occurring as
the chain says. Attributes are drawn independently of time from documented distributions, so
each predicate's selectivity is a property of those distributions, computed here by Monte Carlo
on fresh draws (`truth["selectivity_draws"]` of them). Keys and region attributes are uniform
over `n_keys` / `n_regions` values (seed 002 §5.2: per-region rates are the type's rate split).

    result = synthesize(workload, duration=10_000, seed=1)
    result.events   # pandas: __type, __ts, __id, keys, attributes; sorted by (__ts, __id)
    result.truth    # stats-shaped ground truth: rates, models, selectivities, keys, regions
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cepplan.costmodels.markov import stationary
from cepplan.stats.synth_write import apply_time_format
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.ast import Attr, KleeneRef, walk
from cepplan.workload.expr.vectorized import evaluate
from cepplan.workload.model import OccurrenceModel, Pattern, Workload
from cepplan.workload.source_spec import attribute_types

DEFAULT_RANGE = (0.0, 100.0)


@dataclass(frozen=True)
class SynthResult:
    """Generated events (canonical columns) and the parameters they were drawn from."""

    events: pd.DataFrame
    truth: dict[str, Any]


@dataclass(frozen=True)
class AttributeLaw:
    """How attribute values are drawn: uniform ranges, key and region vocabularies."""

    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    keys: frozenset[str] = frozenset()
    regions: frozenset[str] = frozenset()
    n_keys: int = 4
    n_regions: int = 4
    n_strings: int = 4
    key_weights: tuple[float, ...] | None = None  # P(key k0, k1, ...); None: uniform

    def draw(self, name: str, kind: str, size: int, rng: np.random.Generator) -> np.ndarray:
        """`size` independent values of attribute `name` of type `kind`."""
        vocabulary = (self.n_keys if name in self.keys
                      else self.n_regions if name in self.regions else None)
        if vocabulary is not None:
            if name in self.keys and self.key_weights is not None:
                codes = rng.choice(vocabulary, size, p=self.key_weights)
            else:
                codes = rng.integers(0, vocabulary, size)
            prefix = "k" if name in self.keys else "r"
            if kind == "string":
                return np.array([f"{prefix}{c}" for c in range(vocabulary)], dtype=object)[codes]
            return codes.astype(np.float64 if kind == "double" else np.int64)
        low, high = self.ranges.get(name, DEFAULT_RANGE)
        if kind == "double":
            return rng.uniform(low, high, size)
        if kind == "long":
            return rng.integers(int(low), max(int(high), int(low) + 1), size)
        if kind == "bool":
            return rng.random(size) < 0.5
        return np.array([f"s{c}" for c in range(self.n_strings)],
                        dtype=object)[rng.integers(0, self.n_strings, size)]


def zipf_rates(types: list[str], total_rate: float, skew: float,
               rng: np.random.Generator) -> dict[str, float]:
    """Rates proportional to rank^-skew over a random ranking of the types (seed 002 §6.1)."""
    order = rng.permutation(len(types))
    weights = 1.0 / np.arange(1, len(types) + 1, dtype=float) ** skew
    weights /= weights.sum()
    return {types[i]: float(total_rate * weights[rank]) for rank, i in enumerate(order)}


def synthesize(workload: Workload, *, duration: float, seed: int, zipf_skew: float = 0.255,
               total_rate: float = 10.0, rates: Mapping[str, float] | None = None,
               models: Mapping[str, OccurrenceModel] | None = None,
               ranges: Mapping[str, tuple[float, float]] | None = None, n_keys: int = 4,
               n_regions: int = 4, truth_draws: int = 1_000_000,
               key_skew: float = 0.0) -> SynthResult:
    """Generate `duration` time units of events for `workload`'s primitive types; deterministic
    for a seed. `rates` override the Zipf rates; `models` (default: the workload's inline
    Bernoulli/Markov models) make types occur per time step instead of as Poisson processes.
    `key_skew` > 0 draws keys from a Zipf law (key k_i with weight (i+1)^-skew) instead of
    uniformly: each key then sees each Poisson type at the type's rate times its weight."""
    if duration <= 0:
        raise ValueError(f"duration must be positive, got {duration}")
    rng = np.random.default_rng(seed)
    schema = attribute_types(workload)
    types = list(schema)
    chosen = zipf_rates(types, total_rate, zipf_skew, rng)
    chosen.update(rates or {})
    models = dict(workload.statistics.models if models is None else models)
    source = workload.source
    key_columns = tuple(source.key_columns) if source else ()
    weights = None
    if key_skew > 0:
        raw = 1.0 / np.arange(1, n_keys + 1, dtype=float) ** key_skew
        weights = tuple(float(w) for w in raw / raw.sum())
    law = AttributeLaw(
        ranges=dict(ranges or {}), keys=frozenset(key_columns),
        regions=frozenset(et.region for et in workload.event_types.values() if et.region),
        n_keys=n_keys, n_regions=n_regions, key_weights=weights)

    times: dict[str, np.ndarray] = {}
    truth_models: dict[str, dict[str, Any]] = {}
    truth_rates: dict[str, float] = {}
    for name in types:
        model = models.get(name)
        if model is None or model.kind == "poisson":
            times[name] = _poisson_times(chosen[name], duration, rng)
            truth_rates[name], truth_models[name] = chosen[name], {"kind": "poisson"}
        else:
            times[name], truth_rates[name], truth_models[name] = _stepped_times(
                model, duration, rng)

    events = _assemble(workload, schema, times, key_columns, law, rng)
    if source is not None and source.time_format:
        events = apply_time_format(events, workload)
    truth = {
        "format": "cepplan.stats/1",
        "kind": "synthetic ground truth",
        "time_unit": workload.time_unit,
        "duration": float(duration),
        "generator": {"seed": seed, "zipf_skew": zipf_skew, "total_rate": total_rate,
                      "n_keys": n_keys, "key_skew": key_skew, "n_regions": n_regions,
                      "ranges": {k: list(v) for k, v in law.ranges.items()},
                      "default_range": list(DEFAULT_RANGE)},
        "counts": {name: len(t) for name, t in times.items()},
        "rates": truth_rates,
        "models": truth_models,
        "selectivities": _selectivities(workload, schema, law, truth_draws, seed),
        "selectivity_draws": truth_draws,
        "keys": ({"columns": list(key_columns), "rates": {
            t: _split(r, key_columns, n_keys, "k", weights) for t, r in truth_rates.items()}}
            if len(key_columns) == 1 else {}),
        "regions": {t: {"attribute": et.region, "rates": _split(
            truth_rates[t], (et.region,), n_regions, "r", None,
            numeric=schema[t][et.region] != "string")}
            for t, et in workload.event_types.items() if et.region and t in truth_rates},
    }
    return SynthResult(events=events, truth=truth)


def _poisson_times(rate: float, duration: float, rng: np.random.Generator) -> np.ndarray:
    """A Poisson process on [0, duration): Poisson count, uniform sorted times."""
    return np.sort(rng.uniform(0.0, duration, rng.poisson(rate * duration)))


def _stepped_times(model: OccurrenceModel, duration: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, float, dict[str, Any]]:
    """At most one event per time step, occupied as a Bernoulli or Markov chain says
    (seed 002 §4.2); the event falls uniformly inside its step."""
    step = model.time_step or 1.0
    steps = int(duration // step)
    if model.kind == "bernoulli":
        occupied = rng.random(steps) < model.p
        p_event = float(model.p)
        spec = {"kind": "bernoulli", "p": p_event, "time_step": step}
    else:
        occupied = markov_occupancy(model.transition, model.order, steps, rng)
        pi = stationary(np.array(model.transition))
        p_event = float(pi @ np.array(model.transition)[:, 1])
        spec = {"kind": "markov", "order": model.order, "time_step": step,
                "transition": [list(row) for row in model.transition],
                "stationary": pi.tolist()}
    index = np.flatnonzero(occupied)
    return (index + rng.random(len(index))) * step, p_event / step, spec


def markov_occupancy(transition: Any, order: int, steps: int,
                     rng: np.random.Generator) -> np.ndarray:
    """`steps` occupancy indicators of an order-m chain (state = last m steps, oldest first as a
    binary number), started from its stationary distribution."""
    matrix = np.asarray(transition, dtype=float)
    p_one = matrix[:, 1]
    state = int(rng.choice(len(matrix), p=stationary(matrix)))
    mask = (1 << order) - 1
    draws = rng.random(steps)
    out = np.zeros(steps, dtype=bool)
    for t in range(steps):
        bit = draws[t] < p_one[state]
        out[t] = bit
        state = ((state << 1) | int(bit)) & mask
    return out


def _assemble(workload: Workload, schema: Mapping[str, Mapping[str, str]],
              times: Mapping[str, np.ndarray], key_columns: tuple[str, ...], law: AttributeLaw,
              rng: np.random.Generator) -> pd.DataFrame:
    """One table of all events, sorted by time, ids 0..n-1 in that order."""
    names = list(times)
    counts = np.array([len(times[n]) for n in names])
    ts = np.concatenate([times[n] for n in names]) if names else np.zeros(0)
    type_code = np.repeat(np.arange(len(names)), counts)
    order = np.argsort(ts, kind="stable")
    total = len(ts)
    columns: dict[str, Any] = {
        EVENT_TYPE: np.array(names, dtype=object)[type_code[order]],
        EVENT_TS: ts[order],
        EVENT_ID: np.arange(total, dtype=np.int64),
    }
    all_attrs: dict[str, str] = {}
    for attrs in schema.values():
        for attr, kind in attrs.items():
            all_attrs.setdefault(attr, kind)
    for key in key_columns:
        if key not in all_attrs:
            columns[key] = law.draw(key, "string", total, rng)[order]
    sorted_code = type_code[order]
    for attr, kind in all_attrs.items():
        values = _empty_column(kind, total)
        for code, name in enumerate(names):
            if attr in schema[name]:
                rows = sorted_code == code
                values[rows] = law.draw(attr, schema[name][attr], int(rows.sum()), rng)
        columns[attr] = values
    return pd.DataFrame(columns)


def _empty_column(kind: str, size: int) -> Any:
    if kind == "double":
        return np.full(size, np.nan)
    if kind == "long":
        return pd.arrays.IntegerArray(np.zeros(size, np.int64), np.ones(size, bool))
    if kind == "bool":
        return pd.arrays.BooleanArray(np.zeros(size, bool), np.ones(size, bool))
    return np.full(size, None, dtype=object)


def _split(rate: float, columns: tuple[str, ...], n: int, prefix: str,
           weights: tuple[float, ...] | None = None, *,
           numeric: bool = False) -> list[dict[str, Any]]:
    """A rate split over n values, uniformly or by `weights`."""
    return [{"key": {columns[0]: (c if numeric else f"{prefix}{c}")},
             "rate": rate * (weights[c] if weights else 1.0 / n)} for c in range(n)]


def _selectivities(workload: Workload, schema: Mapping[str, Mapping[str, str]],
                   law: AttributeLaw, draws: int, seed: int) -> dict[str, dict[str, float]]:
    """Each predicate's probability of holding for independently drawn events (Monte Carlo);
    partition attributes are shared by all variables, as in a candidate match."""
    rng = np.random.default_rng([seed, 1])
    result: dict[str, dict[str, float]] = {}
    for pattern in workload.patterns:
        entries = {}
        for predicate in pattern.predicates:
            columns = _draw_columns(pattern, predicate.expr, schema, law, draws, rng)
            if columns is not None:
                passed = evaluate(predicate.portable, columns, draws).astype(bool)
                entries[predicate.text] = float(passed.mean())
        if entries:
            result[pattern.name] = entries
    return result


def _draw_columns(pattern: Pattern, expr: Any, schema: Mapping[str, Mapping[str, str]],
                  law: AttributeLaw, draws: int,
                  rng: np.random.Generator) -> dict[tuple, np.ndarray] | None:
    """Independent draws for every column a predicate reads; None if it reads what the
    generator does not control (complex subevents, timestamps)."""
    shared: dict[str, np.ndarray] = {}
    columns: dict[tuple, np.ndarray] = {}
    for node in walk(expr):
        if isinstance(node, Attr):
            key, ref = (node.var, node.attr), node
        elif isinstance(node, KleeneRef):
            key, ref = (node.func, node.ref.var, node.ref.attr), node.ref
        else:
            continue
        event_type = pattern.operand(ref.var).event_type
        if event_type not in schema or ref.attr not in schema[event_type]:
            return None  # a complex subevent or `ts`: not a drawn attribute
        kind = schema[event_type][ref.attr]
        if ref.attr in pattern.partition_by:
            if ref.attr not in shared:
                shared[ref.attr] = law.draw(ref.attr, kind, draws, rng)
            columns[key] = shared[ref.attr]
        elif key not in columns:
            columns[key] = law.draw(ref.attr, kind, draws, rng)
    return columns
