"""Brute-force reference for selection strategies, written from their definitions (format
doc, "Selection strategies"), not from the rewrite the loader applies: the matches of the
pattern under skip-till-any-match (the reference matcher), kept when every pair of
consecutive variables x, y meets the strategy chosen for the pair:

- next: no event outside the match, of y's type (any of its alternatives), in y's partition,
  after x (a later timestamp; with `seq_ties: allow` one not earlier) and at a timestamp
  before y's, satisfies y's conditions (its predicates over y and variables bound before y or
  optional ones the match leaves unbound, read as NULL) read on it in y's place;
- strict: no event outside the match, in the partition, has a timestamp strictly between x's
  and y's (a Kleene x: its last event's; a Kleene y: its first event's).

A Kleene variable b is consecutive when the pattern's strategy is `strict` or the per-variable
object gives b `strict`: no event outside the match, in the partition, has a timestamp strictly
between two successive events of b.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

import pandas as pd

from cepplan.engine_adapter.runtime.records import plain_value
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.model import KLEENE, NEGATED, Workload
from tests.engine.reference_matcher import reference_matches, truth


def strategy_matches(any_workload: Workload, strategy: str | Mapping[str, Any],
                     events: pd.DataFrame) -> dict[str, list[dict]]:
    """The match objects of every pattern of `any_workload` (its patterns written without a
    strategy) under `strategy`: one for all, or per pattern name one strategy or an object
    naming, per variable, the strategy between it and the variable before it (else any)."""
    pool = [_event(row, any_workload) for row in events.to_dict("records")]
    ties = any_workload.options.seq_ties == "allow"
    out = {}
    for name, found in reference_matches(any_workload, events).items():
        pattern = any_workload.pattern(name)
        chosen = strategy if isinstance(strategy, str) else strategy[name]
        out[name] = [m for m in found if _keeps(pattern, chosen, m, pool, ties)]
    return out


def _event(row: dict, workload: Workload) -> dict:
    event = {"id": int(row[EVENT_ID]), "type": row[EVENT_TYPE], "ts": float(row[EVENT_TS])}
    for attr in workload.attributes_of(row[EVENT_TYPE]):
        event[attr] = plain_value(row.get(attr))
    return event


def _keeps(pattern, strategy: str | Mapping[str, str], match: dict, pool: list[dict],
           ties: bool) -> bool:
    bound = match["events"]
    every = [e for v in bound.values() for e in (v if isinstance(v, list) else [v])]
    own = {(e["type"], e["id"]) for e in every}
    key = tuple(every[0][k] for k in pattern.partition_by)
    others = [e for e in pool if (e["type"], e["id"]) not in own
              and tuple(e.get(k) for k in pattern.partition_by) == key]
    order = [o for o in sorted(pattern.operands, key=lambda o: o.position)
             if o.kind != NEGATED and o.var in bound]  # an unbound optional one is no step
    absent = frozenset(o.var for o in pattern.positive) - set(bound)
    for operand in order:
        chosen = strategy if isinstance(strategy, str) else strategy.get(operand.var, "any")
        if operand.kind == KLEENE and chosen == "strict":
            stamps = sorted(e["ts"] for e in bound[operand.var])
            if any(s < e["ts"] < t for s, t in pairwise(stamps) for e in others):
                return False
    for i in range(1, len(order)):
        x, y = _last(bound[order[i - 1].var]), _first(bound[order[i].var])
        pair = strategy if isinstance(strategy, str) else strategy.get(order[i].var, "any")
        if pair == "any":
            continue
        if pair == "strict":
            if any(x["ts"] < e["ts"] < y["ts"] for e in others):
                return False
            continue
        earlier = {o.var for o in order[:i]}
        conditions = [p for p in pattern.predicates if order[i].var in p.variables
                      and p.variables - {order[i].var} <= earlier | absent]
        for e in others:
            after_x = e["ts"] >= x["ts"] if ties else e["ts"] > x["ts"]
            types = order[i].alternatives or (order[i].event_type,)
            if e["type"] not in types or not after_x or e["ts"] >= y["ts"]:
                continue
            trial = {v: bound[v] for v in earlier} | {order[i].var: e}
            if all(truth(p.expr, trial, absent, frozenset()) is True for p in conditions):
                return False
    return True


def _last(bound: dict | list[dict]) -> dict:
    """A plain variable's event, or a Kleene variable's latest one."""
    return max(bound, key=lambda e: e["ts"]) if isinstance(bound, list) else bound


def _first(bound: dict | list[dict]) -> dict:
    """A plain variable's event, or a Kleene variable's earliest one."""
    return min(bound, key=lambda e: e["ts"]) if isinstance(bound, list) else bound
