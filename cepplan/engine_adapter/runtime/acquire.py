"""The acquisition semi-joins of a pattern (seed 002 §3.3), over NumPy columns.

The same events as the Spark job keeps (`spark.job._acquire`): step-1 variables' events are
kept; an event of a step-k variable is kept only when, for every positive variable of steps
1 … k−1, a kept event of it with the same key lies within the window on the side the SEQ order
allows. Each test is a range semi-join: anchors sorted by (key code, time rank), one
`searchsorted` pair per event.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Columns, key_codes, values
from cepplan.engine_adapter.runtime.tagging import tag
from cepplan.workload.columns import EVENT_TS

if TYPE_CHECKING:
    import pandas as pd


def acquire(pool: pd.DataFrame | Columns, masks: Mapping[str, np.ndarray],
            spec: PatternSpec) -> np.ndarray:
    """Which rows of `pool` the pattern's matchers receive (a boolean mask)."""
    out = np.zeros(len(pool), dtype=bool)
    for rows in kept_rows(pool, masks, spec).values():
        out[rows] = True
    return out


def acquire_in_range(pool: Columns, spec: PatternSpec, seconds: dict[str, float]) -> np.ndarray:
    """`acquire` over a time range's pool, its tag columns (`NAME\t...`) as the masks; the
    time taken added to `seconds["acquire NAME"]`."""
    clock = time.perf_counter()
    labels = [c for c in pool.columns if c.startswith(spec.name + "\t")]
    keep = acquire(pool, {c: pool[c] for c in labels}, spec)
    key = f"acquire {spec.name}"
    seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - clock
    return keep


def kept_rows(pool: pd.DataFrame, masks: Mapping[str, np.ndarray],
              spec: PatternSpec) -> dict[str, np.ndarray]:
    """Per variable, the positions of the rows of `pool` whose tag of it is kept."""
    steps = ([[o.var for o in spec.operands]] if spec.operator == "OR" or spec.window is None
             else [list(s) for s in spec.steps])
    ts = np.asarray(values(pool, EVENT_TS), dtype=np.float64)
    codes = _key_codes(pool, spec.partition_by)
    kept: dict[str, np.ndarray] = {}
    earlier: list[str] = []
    for step in steps:
        for var in step:
            rows = np.flatnonzero(masks[tag(spec.name, var)])
            for other in earlier:
                rows = rows[_within(ts, codes, rows, kept[other], spec.window,
                                    spec.operand(other).position, spec.operand(var).position,
                                    spec.operator == "SEQ")]
            kept[var] = rows
        earlier += [v for v in step if spec.operand(v).kind != "negated"]
    return kept


def _key_codes(pool: pd.DataFrame | Columns, keys: tuple[str, ...]) -> np.ndarray:
    """An integer per distinct key value (-1: a value is missing, which joins nothing)."""
    if not keys:
        return np.zeros(len(pool), dtype=np.int64)
    if isinstance(pool, Columns):
        return key_codes(pool, keys)
    return pool.groupby(list(keys), sort=False, dropna=True).ngroup().to_numpy(np.int64)


def _within(ts: np.ndarray, codes: np.ndarray, rows: np.ndarray, anchors: np.ndarray,
            window: float, anchor_position: int, position: int, ordered: bool) -> np.ndarray:
    """Which of `rows` have an anchor (same key) with event.ts in [a.ts - W, a.ts + W],
    narrowed to [a.ts, a.ts + W] / [a.ts - W, a.ts] when the SEQ order puts the anchor
    before / after: equivalently an anchor with a.ts in [lo, hi] below."""
    anchors = anchors[codes[anchors] >= 0]
    if not len(anchors) or not len(rows):
        return np.zeros(len(rows), dtype=bool)
    times = np.unique(ts[anchors])
    composite = np.sort(codes[anchors] * len(times) + np.searchsorted(times, ts[anchors]))
    lo, hi = ts[rows] - window, ts[rows] + window
    if ordered and anchor_position < position:
        hi = ts[rows]
    elif ordered and anchor_position > position:
        lo = ts[rows]
    base = codes[rows] * len(times)
    first = np.searchsorted(composite, base + np.searchsorted(times, lo, "left"), "left")
    last = np.searchsorted(composite, base + np.searchsorted(times, hi, "right"), "left")
    return (last > first) & (codes[rows] >= 0)
