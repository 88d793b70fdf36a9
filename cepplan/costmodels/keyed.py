"""Costs of a pattern partitioned by a key (docs/planner.md, "Keyed workloads"): events combine
only within one key, so a plan's transmissions and partial matches are sums over the keys.

Two sources, the measured one preferred where it exists:

- **key profile** (the formulas): keys in classes c of n_c keys with per-type rates λ_{t,c};
  each key is the unkeyed model at its own rates, and the figures are summed over the classes:
      f_e(U)  = Σ_c n_c λ_{e,c} · P_{U,c} L_{e,c}(U) / Σ_c n_c λ_{e,c}     (seed 002 §4.1)
      C(S)    = Σ_c n_c W^|S| Π_{v∈S} r_{v,c} · sel_S · ord(S)               (seed 004 App. C)
  f_e(U) is the share of e's events pulled once U is in the earlier steps (the seed's fraction
  of time monitored: cost = Σ_e f_e c_e); C(S) is written as the unkeyed C(S) times the factor
  κ(S) = Σ_c n_c Π r_{v,c} / Π_v Σ_c n_c r_{v,c}. With one key, f_e(U) = P_U L_e(U) and
  κ = 1: today's model.
- **measured** within a key on the statistics' sample (`stats/cooccurrence.py`): f_e(U) =
  coverage(e | U), the share of e's events with a candidate tuple over U around them (what
  the engine pulls: it pulls on time and key, not on the join predicates); C(S) = tuples(S) ·
  W / |S| · sel_S, a node's partial matches per window from its candidate tuples per time unit
  τ(S) (docs/sharing.md: k·C/W are built per time unit), i.e. κ(S) = τ(S) W / (|S| · W^|S|
  Π r_v ord(S)). It holds however a key's events cluster in time (sessions), which the
  per-key Poisson formulas do not see.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from cepplan.costmodels.trees import kleene_rate
from cepplan.workload.model import KeyedStatistics

FORMULA_VARIABLES = 8  # the key-profile formulas cost every subset per class
FORMULA_CLASSES = 32  # classes the formulas are summed over (merged by total count)
MEASURED, PROFILE = "measured within keys", "key profile"


@dataclass(frozen=True)
class KeyedCosts:
    """Per variable and set of earlier variables, the share of its events a plan pulls; per
    set of two or more variables, κ: its keyed partial matches over the unkeyed ones."""

    pulled: Mapping[str, Mapping[frozenset[str], float]]
    factors: Mapping[frozenset[str], float]
    source: str

    def pulled_share(self, var: str, earlier: frozenset[str]) -> float | None:
        """f_e(U), or None when neither source has it (the unkeyed model then applies)."""
        return self.pulled.get(var, {}).get(earlier)

    def factor(self, subset: Iterable[str]) -> float:
        return self.factors.get(frozenset(subset), 1.0)


@dataclass(frozen=True)
class KeyClass:
    """Keys with similar counts: how many, and each type's rate per key."""

    keys: int
    rates: Mapping[str, float]


def key_classes(classes: Sequence[tuple[int, Mapping[str, float]]], span: float,
                limit: int = FORMULA_CLASSES) -> list[KeyClass]:
    """The statistics' classes as per-key rates (count / span), merged to at most `limit` by
    total count (each merged class its keys' mean rates)."""
    if not classes or not span > 0:
        return []
    order = sorted(range(len(classes)), key=lambda i: sum(classes[i][1].values()))
    merged = []
    for chunk in np.array_split(np.asarray(order, dtype=np.int64), min(limit, len(classes))):
        keys = sum(classes[i][0] for i in chunk)
        if not keys:
            continue
        names = {t for i in chunk for t in classes[i][1]}
        merged.append(KeyClass(keys, MappingProxyType({
            t: sum(classes[i][0] * classes[i][1].get(t, 0.0) for i in chunk) / keys / span
            for t in names})))
    return merged


def profile_factors(classes: Sequence[KeyClass], rates: Mapping[str, tuple[str, float]],
                    window: float, kleene: Mapping[str, tuple[int, int, int | None]]
                    ) -> dict[frozenset[str], float]:
    """κ(S) from the key profile for every set of two or more variables: `rates` gives each
    variable's (type, share its filters keep); a Kleene variable (`kleene`: var -> (subset
    cap, fewest events, most events)) counts its effective rate (`trees.kleene_rate`) per key."""
    if not classes:
        return {}
    names = sorted(rates)
    weights = np.array([c.keys for c in classes], dtype=np.float64)
    per = {}
    for var in names:
        type_name, kept = rates[var]
        values = np.array([c.rates.get(type_name, 0.0) * kept for c in classes])
        if var in kleene:
            values = np.array([kleene_rate(v, window, *kleene[var]) for v in values])
        per[var] = values
    totals = {v: float(weights @ per[v]) for v in names}
    out = {}
    for size in range(2, len(names) + 1):
        for subset in itertools.combinations(names, size):
            denominator = math.prod(totals[v] for v in subset)
            if denominator > 0:
                keyed = float(weights @ np.prod([per[v] for v in subset], axis=0))
                out[frozenset(subset)] = keyed / denominator
    return out


def measured_factors(tuples: Mapping[frozenset[str], float], window: float,
                     rates: Mapping[str, float], seq: bool) -> dict[frozenset[str], float]:
    """κ(S) from measured candidate tuples per time unit: τ(S)·W/|S| over W^|S| Π r ord(S)."""
    out = {}
    for subset, per_time in tuples.items():
        if not subset <= set(rates):
            continue
        unkeyed = window ** len(subset) * math.prod(rates[v] for v in subset)
        if seq:
            unkeyed /= math.factorial(len(subset))
        if unkeyed > 0:
            out[frozenset(subset)] = per_time * window / len(subset) / unkeyed
    return out


def tree_factors(stats: KeyedStatistics, window: float, rates: Mapping[str, float],
                 kinds: Mapping[str, tuple[str, float]],
                 kleene: Mapping[str, tuple[int, int, int | None]],
                 seq: bool) -> dict[frozenset[str], float]:
    """κ(S) for the evaluation search: measured from candidate tuples where the sample gave
    them (sets without Kleene variables), else from the key profile. `rates` are the search's
    rates per variable, `kinds` each variable's (type, share its filters keep)."""
    classes = key_classes(stats.classes, stats.span)
    factors = profile_factors(classes, kinds, window, kleene)
    plain = {v: r for v, r in rates.items() if v not in kleene}
    factors.update(measured_factors(stats.tuples, window, plain, seq))
    return factors
