"""Predicate selectivities from a sample of events (seed 004 §2: the probability that a candidate
input passes the condition; seed 002 §5.2: filter selectivities for push-down).

The sample is every event of the pattern's types inside some time blocks (`block_sample.py` picks
them), so pairs close in time survive. Per predicate:

- filter (one variable): the fraction of that variable's type's events that pass;
- join (two or more variables): the fraction of candidate tuples that pass. A candidate binds
  the first variable (the anchor) to an event and every other variable to an event of its type
  within the window, on the side the operator allows (SEQ: after the anchor when its position
  is later, before when earlier; AND: either side), in the same partition (`partition_by`).
  Tuples are drawn uniformly from all candidate tuples of the sample: anchors with probability
  proportional to their number of candidate tuples, partners uniformly (order constraints among
  non-anchor variables are not enforced; for two variables the draw is exact);
- Kleene-internal (`NEXT`/`PREV`): the fraction of consecutive events of the Kleene variable's
  type (same partition, at most one window apart) that pass; other variables join as above.
`FIRST(b.x)`/`LAST(b.x)` read the same event as `b.x`. Each estimate comes with a Wilson 95 %
interval over the n evaluated rows (the rows are independent draws given the sampled blocks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.ast import Attr, KleeneRef, walk
from cepplan.workload.expr.vectorized import evaluate
from cepplan.workload.model import KLEENE_INTERNAL, Pattern, Predicate

Z95 = 1.959963984540054
GUIDE_SCAN = 4  # sums compared one by one per draw; draws still undecided are searched


@dataclass(frozen=True)
class _Sorted:
    """Events of one type sorted by (partition, time), with a searchable composite key; the
    events are rows `positions` of the sample (read from it only for the rows evaluated)."""

    sample: pd.DataFrame
    positions: np.ndarray
    key: np.ndarray  # partition code * stride + time offset
    part: np.ndarray  # partition code
    times: np.ndarray


def estimate_pattern(pattern: Pattern, sample: pd.DataFrame, *, seq_ties: str, budget: int,
                     seed: int) -> dict[str, dict[str, Any]]:
    """Selectivity estimate (value, ci95, n, kind, method) of each predicate of `pattern`, or a
    `reason` with value None when it cannot be measured (complex subevents, no candidates)."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, Any]] = {}
    complex_vars = {o.var for o in pattern.operands if o.is_complex}
    prepared = _prepare(pattern, sample)
    for predicate in pattern.predicates:
        if predicate.variables & complex_vars:
            out[predicate.text] = _skipped(predicate, "reads a complex subevent (measured by "
                                           "running its pattern, not from raw events)")
            continue
        columns, reason = _rows(pattern, predicate, prepared, seq_ties, budget, rng)
        if columns is None:
            out[predicate.text] = _skipped(predicate, reason)
            continue
        length = len(next(iter(columns.values())))
        passed = evaluate(predicate.portable, columns, length).astype(bool)
        out[predicate.text] = _estimate(predicate, int(passed.sum()), length, reason)
    return out


def wilson(passed: int, n: int) -> tuple[float, float]:
    """Wilson score 95 % interval for a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = passed / n
    denom = 1 + Z95 * Z95 / n
    centre = (p + Z95 * Z95 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _estimate(predicate: Predicate, passed: int, n: int, method: str) -> dict[str, Any]:
    low, high = wilson(passed, n)
    return {"kind": predicate.kind, "value": passed / n, "ci95": [low, high], "n": n,
            "passed": passed, "method": method}


def _skipped(predicate: Predicate, reason: str) -> dict[str, Any]:
    return {"kind": predicate.kind, "value": None, "reason": reason}


def _prepare(pattern: Pattern, sample: pd.DataFrame) -> dict[str, _Sorted]:
    """Per primitive type of the pattern, its sampled events sorted by (partition, ts, id)."""
    window = pattern.window or 0.0
    prepared = {}
    times, ids = sample[EVENT_TS].to_numpy(), sample[EVENT_ID].to_numpy()
    t0, t1 = (float(times.min()), float(times.max())) if len(sample) else (0.0, 0.0)
    stride = (t1 - t0) + 4 * window + 1.0
    part = (partition_codes(sample, list(pattern.partition_by)) if pattern.partition_by
            else np.zeros(len(sample)))
    codes, names = pd.factorize(sample[EVENT_TYPE])  # each type name compared once
    for operand in pattern.operands:
        if operand.is_complex or operand.event_type in prepared:
            continue
        code = np.flatnonzero(np.asarray(names, dtype=object) == operand.event_type)
        where = np.flatnonzero(codes == (code[0] if len(code) else -2))
        where = where[_order(part[where], times[where], ids[where])]
        key = part[where] * stride + (times[where] - t0)
        prepared[operand.event_type] = _Sorted(sample, where, key, part[where], times[where])
    return prepared


def _order(part: np.ndarray, times: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The positions in (partition, time, id) order: the identity when the rows are in that
    order already (as the canonical sample usually is), without sorting."""
    later = (part[1:] > part[:-1]) | (part[1:] == part[:-1]) & (
        (times[1:] > times[:-1]) | (times[1:] == times[:-1]) & (ids[1:] > ids[:-1]))
    if later.all():
        return np.arange(len(part))
    return np.lexsort((ids, times, part))


def partition_codes(sample: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Per row, its partition's number in order of first appearance, partitions told apart
    by the text of their values; each column's distinct values are turned into text once
    instead of every row's (the numbers are those of factorizing the rows' texts)."""
    combined = np.zeros(len(sample), dtype=np.int64)
    if not len(sample):  # no event of the pattern's types sampled (pandas cannot index none)
        return combined.astype(np.float64)
    for column in columns:
        codes, distinct = pd.factorize(sample[column])
        if (codes < 0).any() or not _text_exact(sample[column].dtype, distinct):
            texts = pd.MultiIndex.from_frame(sample[columns].astype(str))
            return pd.factorize(texts)[0].astype(np.float64)
        by_text = pd.factorize(np.asarray(distinct, dtype=object).astype(str))[0]
        combined = combined * (int(by_text.max(initial=0)) + 1) + by_text[codes]
    return pd.factorize(combined)[0].astype(np.float64)


def _text_exact(dtype: Any, distinct: pd.Index) -> bool:
    """Whether values equal as values are equal as text: integers, booleans and text (not
    floats: -0.0 == 0.0; not mixed objects: 1 == True == 1.0; NULLs are checked apart)."""
    return dtype.kind in "iub" or (dtype.kind == "O"
                                   and pd.api.types.infer_dtype(distinct) == "string")


def _rows(pattern: Pattern, predicate: Predicate, prepared: Mapping[str, _Sorted],
          seq_ties: str, budget: int,
          rng: np.random.Generator) -> tuple[dict[tuple, np.ndarray] | None, str]:
    """The evaluation rows (column arrays keyed as `vectorized` expects) and the method text,
    or None and the reason nothing can be evaluated."""
    order = [o.var for o in pattern.operands if o.var in predicate.variables]
    internal = predicate.kind == KLEENE_INTERNAL
    anchor = _kleene_var(predicate) if internal else order[0]
    events = prepared[pattern.operand(anchor).event_type]
    partners = [v for v in order if v != anchor]
    if (partners or internal) and pattern.window_events:
        return None, "not measured for a count window (give it under statistics.selectivities)"
    if (partners or internal) and pattern.window is None:
        return None, "the pattern has no window, so there are no candidate pairs"
    if internal:
        rows, shifted = _consecutive(pattern, predicate, events)
        method = "consecutive events of the type within the window"
    else:
        rows, shifted = np.arange(len(events.positions)), {}
        method = ("events of the type" if not partners
                  else "candidate tuples within the window")
    counts = np.ones(len(rows))
    ranges = {}
    for var in partners:
        ranges[var] = _partner_range(pattern, anchor, var, events, rows, prepared, seq_ties)
        left, right, self_pos = ranges[var]
        counts *= np.maximum(right - left - (self_pos >= 0), 0)
    total = counts.sum()
    if total == 0:
        what = "tuples" if partners else "pairs" if internal else "events"
        return None, f"no candidate {what} in the sample"
    if partners:  # uniform over candidate tuples: anchors weighted by their tuple counts
        chosen = weighted_draws(rng, counts / total, int(min(budget, total)))
    elif len(rows) > budget:
        chosen = np.sort(rng.choice(len(rows), size=budget, replace=False))
    else:
        chosen = np.arange(len(rows))
    columns = _columns(predicate, anchor, events, rows[chosen],
                       {k: v[chosen] for k, v in shifted.items()})
    for var in partners:
        left, right, self_pos = (a[chosen] for a in ranges[var])
        size = right - left - (self_pos >= 0)
        index = left + np.floor(rng.random(len(chosen)) * size).astype(np.int64)
        index = np.where((self_pos >= 0) & (index >= self_pos), index + 1, index)
        columns.update(_columns(predicate, var, prepared[pattern.operand(var).event_type],
                                index, {}))
    return columns, method


def weighted_draws(rng: np.random.Generator, p: np.ndarray, size: int) -> np.ndarray:
    """`rng.choice(len(p), size=size, p=p)`, the same draws from the same generator state
    (NumPy's method: uniform numbers searched in the cumulative sum scaled to end at 1),
    each search narrowed by a guide table to the few sums in its 1 / `buckets` of [0, 1)."""
    cdf = p.cumsum()
    cdf /= cdf[-1]
    uniform = rng.random(size)
    buckets = 1 << (2 * len(cdf)).bit_length()  # a power of two: j / buckets is exact
    # guide[j]: how many sums are <= j / buckets (exact: scaling by a power of two is)
    guide = np.cumsum(np.bincount(np.ceil(cdf * buckets).astype(np.int64),
                                  minlength=buckets + 1)[:buckets + 1])
    bucket = (uniform * buckets).astype(np.int64)
    drawn = guide[bucket]
    width = guide[bucket + 1] - drawn  # the answer lies in [drawn, drawn + width]
    active = np.flatnonzero(width > 0)  # draws that may lie past `drawn`
    for _ in range(GUIDE_SCAN):
        past = cdf[drawn[active]] <= uniform[active]
        drawn[active] += past
        width[active] -= 1
        active = active[past & (width[active] > 0)]
    drawn[active] = cdf.searchsorted(uniform[active], side="right")
    return drawn


def _kleene_var(predicate: Predicate) -> str:
    for node in walk(predicate.expr):
        if isinstance(node, KleeneRef) and node.func in ("NEXT", "PREV"):
            return node.ref.var
    raise ValueError(f"{predicate.text!r} has no NEXT/PREV")


def _consecutive(pattern: Pattern, predicate: Predicate,
                 events: _Sorted) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Rows of a Kleene-internal predicate: positions i of the type's sorted events whose
    neighbours (i+1 for NEXT, i-1 for PREV) are in the same partition within the window."""
    funcs = {n.func for n in walk(predicate.expr) if isinstance(n, KleeneRef)}
    part = events.part
    ts = events.times
    n = len(ts)
    linked = np.zeros(n, dtype=bool)  # linked[i]: events i and i+1 are consecutive candidates
    if n > 1:
        linked[:-1] = (part[1:] == part[:-1]) & (ts[1:] - ts[:-1] <= pattern.window)
    ok = np.ones(n, dtype=bool)
    if "NEXT" in funcs:
        ok &= linked
    if "PREV" in funcs:
        ok &= np.concatenate([[False], linked[:-1]]) if n else ok
    rows = np.flatnonzero(ok)
    return rows, {"NEXT": rows + 1, "PREV": rows - 1}


def _partner_range(pattern: Pattern, anchor: str, var: str, events: _Sorted, picked: np.ndarray,
                   prepared: Mapping[str, _Sorted],
                   seq_ties: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per anchor row, the [left, right) positions of `var`'s candidate events and the anchor's
    own position among them (-1 when the types differ) to exclude."""
    target = prepared[pattern.operand(var).event_type]
    at = events.key[picked]
    window = float(pattern.window)
    a_pos, v_pos = pattern.operand(anchor).position, pattern.operand(var).position
    same_type = pattern.operand(var).event_type == pattern.operand(anchor).event_type
    self_pos = picked.astype(np.int64) if same_type else np.full(len(picked), -1)
    if pattern.operator == "SEQ" and v_pos != a_pos:
        if v_pos > a_pos:
            strict = seq_ties != "allow"
            left = np.searchsorted(target.key, at, side="right" if strict else "left")
            right = np.searchsorted(target.key, at + window, side="right")
        else:
            left = np.searchsorted(target.key, at - window, side="left")
            right = np.searchsorted(target.key, at, side="left" if seq_ties != "allow"
                                    else "right")
        inside = (self_pos >= left) & (self_pos < right)
        self_pos = np.where(inside, self_pos, -1)
    else:
        left = np.searchsorted(target.key, at - window, side="left")
        right = np.searchsorted(target.key, at + window, side="right")
    return left, right, self_pos


def _columns(predicate: Predicate, var: str, events: _Sorted, rows: np.ndarray,
             shifted: Mapping[str, np.ndarray]) -> dict[tuple, np.ndarray]:
    """The columns a predicate reads from `var`: `var.attr` at `rows`, NEXT/PREV at the
    shifted rows, FIRST/LAST at `rows` (the same event)."""
    columns: dict[tuple, np.ndarray] = {}
    for node in walk(predicate.expr):
        if isinstance(node, Attr) and node.var == var:
            columns[(var, node.attr)] = attribute_values(events.sample, node.attr,
                                                events.positions[rows])
        elif isinstance(node, KleeneRef) and node.ref.var == var:
            where = shifted.get(node.func, rows)
            columns[(node.func, var, node.ref.attr)] = attribute_values(
                events.sample, node.ref.attr, events.positions[where])
    return columns


def attribute_values(frame: pd.DataFrame, attr: str, rows: np.ndarray) -> np.ndarray:
    """An attribute's values at `rows` as NumPy (nullable integers as float, NA as NaN)."""
    series = frame[EVENT_TS if attr == "ts" else attr].iloc[rows]
    if str(series.dtype) == "Int64":
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    if str(series.dtype) == "boolean":
        return series.to_numpy(dtype=bool, na_value=False)
    return series.to_numpy()
