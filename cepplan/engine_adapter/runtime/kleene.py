"""Kleene+ by bitmask enumeration of subsets (seed 001 §2.4, "Execution of Kleene+ Operator").

For one binding of the other variables, a Kleene variable's last event is fixed by the join and
its other candidate events (at most `kleene_cap - 1`, in time order) are chosen by the bits of
the numbers 0 .. 2^m - 1 (bit j takes candidate j; the last event is always taken), the
Banker's-sequence enumeration of the seed done as one NumPy bit matrix. Predicates with
`FIRST`/`NEXT`/`PREV` are evaluated for all subsets at once: per-event reads as an (M, m+1)
matrix, masked by the chosen bits (and, for `NEXT`/`PREV`, by the existence of a neighbour).
The numbers are taken `BLOCK` at a time, so the enumeration's working memory is bounded
whatever the cap; only the subsets kept grow with it (the matcher's memory budget counts them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import combinations, product
from operator import itemgetter

import numpy as np

from cepplan.engine_adapter.runtime.spec import PredicateSpec
from cepplan.engine_adapter.runtime.table import Table
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

Fixed = Callable[[tuple], object]  # a column key of another variable -> its value in this row
BLOCK = 1 << 16  # subsets whose bit matrices are built at once
CACHED_GETTERS = 16  # the largest candidate count whose getters are kept (2^16 of them)


def subsets(table: Table, var: str, candidates: np.ndarray, last: int,
            preds: Sequence[PredicateSpec], fixed: Fixed) -> list[tuple[int, ...]]:
    """Every subset of `candidates` (plus `last`) satisfying `preds`, each as ranks in order.

    Cost O(2^m · m) time for m candidates, O(BLOCK · m) memory besides the subsets kept; the
    caller caps m (DESIGN.md, Semantics).
    """
    m = len(candidates)
    events = np.append(candidates, last).astype(np.int64)
    kept: list[tuple[int, ...]] = []
    for first in range(0, 1 << m, BLOCK):
        masks = np.arange(first, min(1 << m, first + BLOCK), dtype=np.int64)
        bits = np.ones((len(masks), m + 1), dtype=bool)
        if m:
            bits[:, :m] = ((masks[:, None] >> np.arange(m)) & 1).astype(bool)
        if preds:
            bits = bits[_holding(table, var, bits, events, preds, fixed)]
        kept.extend(tuple(events[row].tolist()) for row in bits)
    return kept


def consecutive_subsets(table: Table, var: str, candidates: np.ndarray, last: int,
                        preds: Sequence[PredicateSpec], fixed: Fixed,
                        instants: np.ndarray) -> list[tuple[int, ...]]:
    """The subsets of `subsets` whose events follow each other in the partition (strict
    contiguity): no event of the table strictly between two successive ones, `instants`
    numbering the table's distinct timestamps. Such a subset takes, for a run of successive
    instants ending at `last`'s, a non-empty part of each instant's candidates (`last` always):
    O(run) subsets without equal timestamps, not O(2^m)."""
    at = instants[candidates]
    end = int(instants[last])
    present = set(at.tolist())
    start = end  # the earliest instant every instant after which (to `last`'s) has a candidate
    while start - 1 in present:
        start -= 1
    run = candidates[at >= start]
    events = np.append(run, last).astype(np.int64)
    if len(events) == end - start + 1:  # one event per timestamp: the run's suffixes
        bits = np.triu(np.ones((len(events), len(events)), dtype=bool))
    else:
        bits = _tied_runs(events, instants, start, end)
    if preds:
        bits = bits[_holding(table, var, bits, events, preds, fixed)]
    return [tuple(events[row].tolist()) for row in bits]


def _tied_runs(events: np.ndarray, instants: np.ndarray, start: int, end: int) -> np.ndarray:
    """`consecutive_subsets`' bit rows where timestamps repeat: per run of instants from one
    in [start, end] to `end`, a non-empty part of each instant's events (the last's holding
    the last event)."""
    groups = [np.flatnonzero(instants[events] == instant) for instant in range(start, end + 1)]
    rows = []
    for first in range(len(groups)):
        choices = [_non_empty(g, g is groups[-1]) for g in groups[first:]]
        for combo in product(*choices):
            row = np.zeros(len(events), dtype=bool)
            for part in combo:
                row[list(part)] = True
            rows.append(row)
    return np.asarray(rows, dtype=bool).reshape(len(rows), len(events))


def _non_empty(group: np.ndarray, ends: bool) -> list[tuple[int, ...]]:
    """The non-empty parts of one instant's events (positions); of the last instant, those
    holding the last event (the group's last position)."""
    members = group.tolist()
    if ends:
        rest = members[:-1]
        return [(*c, members[-1]) for size in range(len(rest) + 1)
                for c in combinations(rest, size)]
    return [c for size in range(1, len(members) + 1) for c in combinations(members, size)]


@lru_cache(maxsize=CACHED_GETTERS + 1)
def subset_getters(m: int) -> tuple[Callable[[tuple], tuple], ...]:
    """Every subset of m candidates plus the last event, in `subsets`' order (bit j of the
    subset's number takes candidate j), as getters over the tuple (candidates..., last):
    the enumeration without predicates, with no NumPy call per binding. Kept for m up to
    `CACHED_GETTERS` (larger m: `subsets`, whose memory is bounded)."""
    if m > CACHED_GETTERS:
        raise ValueError(f"{m} candidates: enumerate them with `subsets`")
    getters = []
    for mask in range(1 << m):
        chosen = [j for j in range(m) if mask >> j & 1]
        getters.append(itemgetter(*chosen, m) if chosen else itemgetter(slice(m, m + 1)))
    return tuple(getters)


def _holding(table: Table, var: str, bits: np.ndarray, events: np.ndarray,
             preds: Sequence[PredicateSpec], fixed: Fixed) -> np.ndarray:
    """For each subset (row of `bits`), whether every predicate holds."""
    count, width = bits.shape
    nxt = np.full((count, width), -1, dtype=np.int64)
    prv = np.full((count, width), -1, dtype=np.int64)
    cur = np.full(count, -1, dtype=np.int64)
    for j in range(width - 1, -1, -1):
        nxt[:, j] = cur
        cur = np.where(bits[:, j], j, cur)
    cur = np.full(count, -1, dtype=np.int64)
    for j in range(width):
        prv[:, j] = cur
        cur = np.where(bits[:, j], j, cur)
    first = np.argmax(bits, axis=1)
    ok = np.ones(count, dtype=bool)
    for pred in preds:
        uses = pred.uses[var]
        per_event = bool(uses & {"plain", "NEXT", "PREV"})
        length = count * width if per_event else count
        columns = {}
        for key in referenced_keys(pred.tree):
            columns[key] = _column(table, var, key, per_event, (count, width), events,
                                   nxt, prv, first, fixed, length)
        result = np.asarray(evaluate(pred.tree, columns, length), dtype=bool)
        if per_event:
            valid = bits.copy()
            if "NEXT" in uses:
                valid &= nxt >= 0
            if "PREV" in uses:
                valid &= prv >= 0
            ok &= np.all(result.reshape(count, width) | ~valid, axis=1)
        else:
            ok &= result
    return ok


def _column(table: Table, var: str, key: tuple, per_event: bool, shape: tuple[int, int],
            events: np.ndarray, nxt: np.ndarray, prv: np.ndarray, first: np.ndarray,
            fixed: Fixed, length: int) -> np.ndarray:
    """The values of one column key for every (subset[, position]) row."""
    if len(key) == 2 and key[0] != var:
        return np.repeat(np.asarray([fixed(key)]), length)
    if len(key) == 3 and key[1] != var:
        return np.repeat(np.asarray([fixed(key)]), length)
    attr = key[-1]
    values = table.column(attr)
    if len(key) == 2:  # plain read of the Kleene variable: one value per position
        return np.broadcast_to(values[events][None, :], shape).ravel()
    func = key[0]
    if func == "LAST":
        picked = np.repeat(values[events[-1:]], shape[0])
    elif func == "FIRST":
        picked = values[events[first]]
    else:
        neighbour = nxt if func == "NEXT" else prv
        return values[events[np.maximum(neighbour, 0)]].ravel()
    if per_event:
        return np.broadcast_to(picked[:, None], shape).ravel()
    return picked
