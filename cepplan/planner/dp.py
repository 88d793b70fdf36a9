"""The exact dynamic program of seed 002 §3.2.1 (Algorithm 1), generalised to complex subevents.

poplans[S] holds the Pareto-optimal plans monitoring the subevents S; a plan for j ∪ s is a
plan for j followed by one step monitoring s (the Pareto-optimal substructure property). Here
the table is indexed by (subset, latency), latency being an integer number of steps, and keeps
the cheapest plan per cell, so every cell of a subset's Pareto front is exact without a k
limit; k applies to what a node propagates to its parents (§6.3, `strategies`).

The cost of appending step s to a plan for j is P_j · Σ_{e ∈ s} L_e(j) c_e (seed 002 §4.1):
P_j and L_e(j) depend only on the set j, so they are computed once per subset. A complex
subevent offers several (cost, latency) options; for a step s and a latency threshold τ the
cheapest combination whose slowest option is at most τ takes, per subevent, its cheapest
option of latency <= τ (the generalisation the seed sketches: repeat the step for all plan
configurations of s). For SEQ the latency state counts steps only from the step holding the
sequence's last subevent (§4.1), which keeps the substructure property.

Runs in O(3^n · τ · n) for n positive subevents; negated subevents and OR are added by
`complete_front`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from cepplan.costmodels.operators import (
    SEQ,
    PatternModel,
    monitoring_interval,
    pulled_fraction,
    reachability,
)
from cepplan.planner.candidates import Candidate, Option, pareto_front

_BIG = 1e200
MEMORY_BUDGET = 1 << 30  # bytes of DP tables; a larger DP falls back to the heuristics


class DeadlineExceeded(RuntimeError):
    """The DP did not finish within its time limit (or would not fit its memory budget)."""


def table_bytes(model: PatternModel, options: Mapping[str, Sequence[Option]]) -> float:
    """Bytes the DP's tables take for this pattern: per subset, the bit and interval rows, the
    (latency x 4) plan tables and the per-threshold step rows (a float, to avoid overflow)."""
    names = [o.var for o in model.positives]
    n = len(names)
    thresholds = len({opt.latency for v in names for opt in options[v]})
    max_lat = sum(max(opt.latency for opt in options[v]) for v in names)
    return 8.0 * 2.0 ** n * (2 * n + 4 * (max_lat + 1) + thresholds * (n + 2) + 1)


def solve(model: PatternModel, options: Mapping[str, Sequence[Option]],
          deadline: float | None = None) -> list[Candidate]:
    """The Pareto front of plans over the pattern's positive subevents (Algorithm 1);
    `DeadlineExceeded` past the deadline or when the tables exceed `MEMORY_BUDGET`."""
    if table_bytes(model, options) > MEMORY_BUDGET:
        raise DeadlineExceeded(f"DP over {len(model.positives)} subevents would need "
                               f"{table_bytes(model, options) / 2**30:.3g} GiB")
    positives = sorted(model.positives, key=lambda o: o.position)
    names = [o.var for o in positives]
    n = len(names)
    size = 1 << n
    full = size - 1
    thresholds = sorted({opt.latency for v in names for opt in options[v]})
    cheapest, which, speed = _cheapest_options(names, options, thresholds)
    bits = ((np.arange(size)[:, None] >> np.arange(n)[None, :]) & 1).astype(float)
    reach, intervals = _subset_terms(model, names, deadline)
    max_lat = sum(max(opt.latency for opt in options[v]) for v in names)
    best = np.full((size, max_lat + 1), np.inf)
    prev = np.zeros((size, max_lat + 1), dtype=np.int64)
    prev_lat = np.zeros((size, max_lat + 1), dtype=np.int64)
    prev_thr = np.zeros((size, max_lat + 1), dtype=np.int64)
    last_bit = 1 << (n - 1) if model.operator == SEQ else 0
    masks = np.arange(size)
    finite = np.isfinite(cheapest)
    cheapest_or_0 = np.where(finite, cheapest, 0.0)
    first = bits @ np.where(np.isinf(cheapest), _BIG, cheapest).T  # (size, thresholds)
    step_lat = (bits[:, None, :] * speed[None, :, :]).max(axis=2).astype(np.int64)
    for t in range(len(thresholds)):
        lat = np.where(masks & last_bit, step_lat[:, t], 0) if last_bit else step_lat[:, t]
        ok = (first[:, t] < _BIG / 2) & (masks > 0)
        better = ok & (first[:, t] < best[masks, lat])
        best[masks[better], lat[better]] = first[better, t]
        prev_thr[masks[better], lat[better]] = t
    for j in range(1, full):
        if deadline is not None and time.perf_counter() > deadline:
            raise DeadlineExceeded(f"DP over {n} subevents exceeded its time limit")
        lats = np.nonzero(np.isfinite(best[j]))[0]
        if not len(lats):
            continue
        subs = _submasks(full ^ j)
        targets = j | subs
        weights = np.where(finite, cheapest_or_0 * intervals[j][None, :], _BIG)
        raw = bits[subs] @ weights.T  # (subs, thresholds); >= _BIG: some option missing
        increments = reach[j] * raw
        for t in range(len(thresholds)):
            valid = raw[:, t] < _BIG / 2
            if not valid.any():
                continue
            sub_t, tgt_t = subs[valid], targets[valid]
            cand = best[j, lats][:, None] + increments[valid, t][None, :]
            tau = step_lat[sub_t, t][None, :]
            if not last_bit or j & last_bit:
                new_lat = lats[:, None] + tau
            else:
                new_lat = np.broadcast_to(np.where(sub_t & last_bit, tau, 0), cand.shape)
            tgt = np.broadcast_to(tgt_t[None, :], cand.shape)
            better = cand < best[tgt, new_lat]
            if not better.any():
                continue
            rows = np.broadcast_to(lats[:, None], cand.shape)[better]
            best[tgt[better], new_lat[better]] = cand[better]
            prev[tgt[better], new_lat[better]] = j
            prev_lat[tgt[better], new_lat[better]] = rows
            prev_thr[tgt[better], new_lat[better]] = t
    found = []
    for lat in np.nonzero(np.isfinite(best[full]))[0]:
        steps, choices = _walk_back(full, int(lat), prev, prev_lat, prev_thr, names, which)
        found.append(Candidate(steps, float(best[full, lat]), int(lat), choices))
    return pareto_front(found)


def _cheapest_options(names: list[str], options: Mapping[str, Sequence[Option]],
                      thresholds: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per latency threshold τ and subevent: the cheapest option of latency <= τ, its index
    and its latency; inf / -1 / 0 where none is fast enough."""
    shape = (len(thresholds), len(names))
    cost, index, speed = np.full(shape, np.inf), np.full(shape, -1), np.zeros(shape)
    for t, tau in enumerate(thresholds):
        for e, var in enumerate(names):
            for i, opt in enumerate(options[var]):
                if opt.latency <= tau and opt.cost < cost[t, e]:
                    cost[t, e], index[t, e], speed[t, e] = opt.cost, i, opt.latency
    return cost, index, speed


def _subset_terms(model: PatternModel, names: list[str],
                  deadline: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """P_j and L_e(j) for every subset j of the positive subevents (seed 002 §4.1); for a
    partitioned pattern 1 and f_e(j), the share of e's events pulled within the keys."""
    n = len(names)
    size = 1 << n
    reach = np.zeros(size)
    intervals = np.zeros((size, n))
    for mask in range(1, size):
        # every subset: one reachability can take tens of ms (small patterns never reached
        # a 256th subset, so planning 200 of them ran 8x past the limit)
        if deadline is not None and time.perf_counter() > deadline:
            raise DeadlineExceeded(f"DP over {n} subevents exceeded its time limit")
        subset = frozenset(names[e] for e in range(n) if mask >> e & 1)
        if model.keyed is not None:  # the shares pulled within keys: P_j folded into each
            reach[mask] = 1.0
            for e in range(n):
                if not mask >> e & 1:
                    intervals[mask, e] = pulled_fraction(model, names[e], subset)
            continue
        reach[mask] = reachability(model, subset)
        for e in range(n):
            if not mask >> e & 1:
                intervals[mask, e] = monitoring_interval(model, names[e], subset)
    return reach, intervals


@lru_cache(maxsize=4096)
def _submasks(mask: int) -> np.ndarray:
    """Every non-empty submask of `mask` (read-only: the same few masks recur in every DP)."""
    subs = np.zeros(1, dtype=np.int64)
    bit = 1
    while bit <= mask:
        if mask & bit:
            subs = np.concatenate([subs, subs | bit])
        bit <<= 1
    subs = subs[1:]
    subs.flags.writeable = False
    return subs


def _walk_back(mask: int, lat: int, prev: np.ndarray, prev_lat: np.ndarray,
               prev_thr: np.ndarray, names: list[str],
               which: np.ndarray) -> tuple[tuple[frozenset[str], ...], dict[str, int]]:
    steps: list[frozenset[str]] = []
    choices: dict[str, int] = {}
    while mask:
        before, t = int(prev[mask, lat]), int(prev_thr[mask, lat])
        step = mask ^ before
        members = [e for e in range(len(names)) if step >> e & 1]
        steps.append(frozenset(names[e] for e in members))
        choices.update({names[e]: int(which[t, e]) for e in members})
        mask, lat = before, int(prev_lat[mask, lat])
    return tuple(reversed(steps)), choices
