"""stats.json's `keyed` section (docs/stats.md, "Keyed statistics"): per pattern partitioned by
a key, how its events spread over the keys and how they co-occur within one.

- `keys`: the keys holding an event of the pattern's types; per type its keys, the per-key
  counts' mean and quantiles, and the share of its events in the hottest 1 % and 10 % of keys
  (skew);
- `profile`: the keys grouped into at most `MAX_CLASSES` classes of similar per-type counts
  (half-octave bins of each type's count), each with its number of keys and mean counts — what
  the per-key cost formulas sum over (docs/planner.md, "Keyed workloads");
- `cooccurrence`: coverage and candidate tuples within a key, measured on the selectivity
  sample (`cooccurrence.py`).
Everything is derived from the engines' counts per (type, key) and from the sample, so both
engines give the same section.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from cepplan.stats import cooccurrence
from cepplan.stats.scan import COUNT, SampleBlocks
from cepplan.workload.columns import EVENT_TYPE
from cepplan.workload.model import Pattern, Workload

MAX_CLASSES = 128
QUANTILES = (0.5, 0.9, 0.99)


def keyed_patterns(workload: Workload) -> list[Pattern]:
    """The patterns a keyed section is measured for: partitioned, over primitive events."""
    return [p for p in workload.patterns if p.partition_by
            and any(not o.is_complex for o in p.operands)]


def keyed_section(workload: Workload, counted: pd.DataFrame, span: float,
                  samples: Mapping[str, tuple[pd.DataFrame, SampleBlocks]],
                  observed: tuple[float, float], rates: Mapping[str, float]) -> dict[str, Any]:
    """Per partitioned pattern: its keys, key profile and (when it was sampled) co-occurrence
    within a key. `counted` holds valid rows per (type, group columns)."""
    out: dict[str, Any] = {}
    for pattern in keyed_patterns(workload):
        types = sorted({o.event_type for o in pattern.operands if not o.is_complex})
        per_key = _per_key_counts(counted, types, list(pattern.partition_by))
        entry: dict[str, Any] = {"partition_by": list(pattern.partition_by),
                                 **key_spread(per_key, types),
                                 "profile": key_profile(per_key, types, span)}
        if pattern.name in samples:
            part, blocks = samples[pattern.name]
            entry["cooccurrence"] = cooccurrence.measure(pattern, part, blocks, observed, rates)
        out[pattern.name] = entry
    return out


def _per_key_counts(counted: pd.DataFrame, types: list[str], columns: list[str]) -> np.ndarray:
    """Per key (rows holding a value in every key column), its count of each type."""
    if counted.empty or any(c not in counted.columns for c in columns):
        return np.zeros((0, len(types)))
    rows = counted[counted[EVENT_TYPE].isin(types)].dropna(subset=columns)
    if rows.empty:
        return np.zeros((0, len(types)))
    keys = pd.MultiIndex.from_frame(rows[columns].astype(str))
    codes, distinct = pd.factorize(keys)
    type_code = pd.Categorical(rows[EVENT_TYPE], categories=types).codes
    table = np.zeros((len(distinct), len(types)))
    np.add.at(table, (codes, type_code), rows[COUNT].to_numpy(dtype=np.float64))
    return table


def key_spread(per_key: np.ndarray, types: list[str]) -> dict[str, Any]:
    """Keys holding events, and per type: keys, count, per-key mean and quantiles over the
    keys holding any event of the pattern's types, and the hottest keys' share."""
    spread = {}
    for t, name in enumerate(types):
        counts = per_key[:, t]
        total = float(counts.sum())
        ordered = np.sort(counts)[::-1]
        spread[name] = {
            "count": int(total), "keys": int((counts > 0).sum()),
            "per_key": {"mean": float(counts.mean()) if len(counts) else 0.0,
                        **{f"p{round(q * 100)}": float(np.quantile(counts, q))
                           if len(counts) else 0.0 for q in QUANTILES},
                        "max": float(ordered[0]) if len(ordered) else 0.0},
            "hottest_share": {label: (float(ordered[:max(1, round(len(ordered) * share))].sum())
                                      / total if total else 0.0)
                              for label, share in (("1%", 0.01), ("10%", 0.1))}}
    return {"keys": len(per_key), "types": spread}


def key_profile(per_key: np.ndarray, types: list[str], span: float) -> dict[str, Any]:
    """Keys grouped by half-octave bins of each type's count (coarser bins while there are
    more than `MAX_CLASSES` groups), each class its number of keys and mean counts."""
    classes = _classes(per_key)
    return {"span": span, "types": types,
            "classes": [{"keys": len(rows),
                         "counts": [float(v) for v in per_key[rows].mean(axis=0)]}
                        for rows in classes]}


def _classes(per_key: np.ndarray) -> list[np.ndarray]:
    """The keys (rows of `per_key`) of each class, the classes in the order of their bins:
    however an engine ordered the keys, the same list."""
    if not len(per_key):
        return []
    for per_octave in (2.0, 1.0, 0.5, 0.25):
        bins = np.where(per_key > 0, 1 + np.floor(per_octave * np.log2(np.maximum(per_key, 1))),
                        0).astype(np.int64)
        codes = pd.factorize(pd.MultiIndex.from_arrays(list(bins.T)), sort=True)[0] \
            if bins.shape[1] > 1 else pd.factorize(bins[:, 0], sort=True)[0]
        if codes.max() < MAX_CLASSES:
            break
    else:  # still too many: equal numbers of keys by total count (ties by their counts)
        order = np.lexsort([*per_key.T[::-1], per_key.sum(axis=1)])
        return [np.sort(chunk) for chunk in np.array_split(order, MAX_CLASSES)]
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(codes.max() + 2))
    return [order[lo:hi] for lo, hi in itertools.pairwise(bounds)]
