"""The brute-force reference matcher: every binding tried, straight from the semantics.

DESIGN.md "Semantics" and docs/matching.md: events ordered by (timestamp, id, type); each plain
variable binds one event of its type (of any of its alternatives, `x:A|B`; an optional one
binds one or none), each Kleene variable a non-empty set of them (in that order; of `min` to
`max` events when bounded); no event is bound twice; max(ts) - min(ts) <= window; in a SEQ
every event of an earlier operand precedes every event of a later one (strict: smaller
timestamp; `seq_ties` allow: a timestamp not larger, whatever the row order); all predicates
hold; with a partition key all events share its (non-missing) value; a negated variable blocks
the match when some other event of its type, placed as its position says and keeping the
window, satisfies its predicates (seed 002 §2.2); a match is held back (not reported) when the
time where such an event could block it — its gap — reaches outside the time the input covers
(its first to its last event's timestamp). Slow (exponential) and obviously right; tests only.
The one shortcut: candidate sets wider than the window are never formed (no match can contain
one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.records import complex_event_id, plain_value
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.detection_graph import bottom_up_order, detection_graph
from cepplan.workload.expr.ast import Attr, Binary, Unary, walk
from cepplan.workload.expr.evaluate import holds, value_of
from cepplan.workload.model import KLEENE, NEGATED, Pattern, Workload


def reference_matches(workload: Workload, events: pd.DataFrame) -> dict[str, list[dict]]:
    """Match objects (format doc, "matches") of every pattern, children before parents."""
    return reference_run(workload, events)[0]


def reference_run(workload: Workload, events: pd.DataFrame
                  ) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """(the match objects of every pattern, the matches held back per pattern)."""
    pool = [_event(row, workload) for row in events.to_dict("records")]
    stamps = [e["ts"] for e in pool]
    span = (min(stamps), max(stamps)) if stamps else (math.inf, -math.inf)
    out: dict[str, list[dict]] = {}
    held: dict[str, int] = {}
    for name in bottom_up_order(detection_graph(workload)):
        pattern = workload.pattern(name)
        found = []
        held[name] = 0
        for group in _partitions(pool, pattern):
            for match in _pattern_matches(pattern, group, workload):
                if _undecided(pattern, match["bound"], span):
                    held[name] += 1
                else:
                    found.append(match)
        out[name] = [m["object"] for m in found]
        pool += [_complex_event(pattern, m) for m in found]
    return out, held


def _undecided(pattern: Pattern, bound: dict, span: tuple[float, float]) -> bool:
    """Whether the gap of some negated variable (where an event of it would block the match:
    within the window, and in a SEQ after the operands before it and before those after it)
    reaches outside the time the input covers."""
    window = pattern.window
    stamps = {var: [e["ts"] for e in chosen] for var, chosen in bound.items()}
    every = [t for ts in stamps.values() for t in ts]
    for negated in pattern.negated:
        low, high = max(every) - window, min(every) + window
        if pattern.operator == "SEQ":
            for operand in pattern.positive:
                if operand.var not in stamps:  # an optional variable left unbound
                    continue
                if operand.position < negated.position:
                    low = max(low, *stamps[operand.var])
                else:
                    high = min(high, *stamps[operand.var])
        if low < span[0] or high > span[1]:
            return True
    return False


def _event(row: dict, workload: Workload) -> dict:
    kind = row[EVENT_TYPE]
    event = {"id": int(row[EVENT_ID]), "type": kind, "ts": float(row[EVENT_TS])}
    for attr in workload.attributes_of(kind):  # NaN kept: a comparison with it is false
        value = plain_value(row.get(attr))
        event[attr] = math.nan if value is None and _is_nan(row.get(attr)) else value
    return event


def _is_nan(value: object) -> bool:
    return isinstance(value, float | np.floating) and math.isnan(value)


def _partitions(pool: list[dict], pattern: Pattern) -> list[list[dict]]:
    if not pattern.partition_by:
        return [pool]
    groups: dict[tuple, list[dict]] = {}
    for event in pool:
        key = tuple(event.get(k) for k in pattern.partition_by)
        if any(v is None or _is_nan(v) for v in key):
            continue
        groups.setdefault(key, []).append(event)
    return list(groups.values())


def _key(event: dict) -> tuple:
    return (event["ts"], event["id"], event["type"])


def _precedes(first: dict, second: dict, strict: bool) -> bool:
    """SEQ order: strictly smaller timestamp, or with ties allowed a timestamp not larger
    (whatever the row order within one timestamp; distinctness is checked apart)."""
    return first["ts"] < second["ts"] if strict else first["ts"] <= second["ts"]


def _choices(operand, events: list[dict], window: float) -> list[list[dict]]:
    """Every event (plain) or non-empty set of events (Kleene) of the operand's type (any of
    its alternatives) whose timestamps span at most the window (a larger set cannot be in any
    match)."""
    types = operand.alternatives or (operand.event_type,)
    mine = sorted((e for e in events if e["type"] in types), key=_key)
    if operand.kind != KLEENE:
        return [[e] for e in mine]
    out: list[list[dict]] = []

    def grow(chosen: list[dict], start: int) -> None:
        for i in range(start, len(mine)):
            if chosen and mine[i]["ts"] - chosen[0]["ts"] > window:
                break
            out.append([*chosen, mine[i]])
            grow(out[-1], i + 1)

    grow([], 0)
    high = operand.max_count or len(mine)  # {n,m}: sets of n to m events
    return [s for s in out if operand.min_count <= len(s) <= high]


def _pattern_matches(pattern: Pattern, events: list[dict], workload: Workload) -> list[dict]:
    strict = workload.options.seq_ties == "strict"
    window = math.inf if pattern.window is None else pattern.window
    groups = ([(o,) for o in pattern.positive] if pattern.operator == "OR"
              else _with_or_without_optional(pattern.positive))
    found = []
    for operands in groups:
        choices = [_choices(o, events, window) for o in operands]
        absent = frozenset(o.var for o in pattern.positive) - {o.var for o in operands}
        if pattern.operator == "OR":
            absent = frozenset()
        for chosen in _combinations(choices, window):
            bound = dict(zip((o.var for o in operands), chosen, strict=True))
            if _valid(pattern, operands, bound, events, strict, window, absent):
                found.append({"bound": bound, "object": _object(pattern, bound)})
    return found


def _with_or_without_optional(positive: Sequence) -> list[tuple]:
    """The positive operands a match binds: all, less any set of the optional ones."""
    groups: list[tuple] = [()]
    for operand in positive:
        groups = [(*g, operand) for g in groups] + (groups if operand.optional else [])
    return [g for g in groups if g]


def truth(expr, binding: dict, absent: frozenset[str], kleene) -> bool | None:
    """SQL's three-valued truth of `expr` with the `absent` variables' attributes NULL: an
    atom reading one is NULL; `and`, `or`, `not` as in SQL."""
    if isinstance(expr, Binary) and expr.op in ("and", "or"):
        left = truth(expr.left, binding, absent, kleene)
        right = truth(expr.right, binding, absent, kleene)
        decided = expr.op == "or"  # the value that decides it whatever the other side
        if decided in (left, right):
            return decided
        return None if None in (left, right) else not decided
    if isinstance(expr, Unary) and expr.op == "not":
        value = truth(expr.operand, binding, absent, kleene)
        return None if value is None else not value
    if any(isinstance(n, Attr) and n.var in absent for n in walk(expr)):
        return None
    return holds(expr, binding, kleene)


def _defines_absent(pattern: Pattern, pred, absent: frozenset[str]) -> bool:
    """Whether `pred` is the condition of an absent variable y (as MATCH_RECOGNIZE's DEFINE
    of y): it reads y and otherwise only positive variables written before y."""
    for var in pred.variables & absent:
        y = pattern.operand(var).position
        if all(pattern.operand(v).kind != NEGATED and pattern.operand(v).position < y
               for v in pred.variables - {var}):
            return True
    return False


def _combinations(choices: list[list[list[dict]]], window: float):
    """The product of the operands' choices, skipping partial bindings wider than the window."""
    def visit(index: int, picked: list, low: float, high: float):
        if index == len(choices):
            yield list(picked)
            return
        for option in choices[index]:
            new_low = min(low, option[0]["ts"])
            new_high = max(high, option[-1]["ts"])
            if new_high - new_low <= window:
                picked.append(option)
                yield from visit(index + 1, picked, new_low, new_high)
                picked.pop()

    yield from visit(0, [], math.inf, -math.inf)


def _valid(pattern: Pattern, operands: Sequence, bound: dict, events: list[dict],
           strict: bool, window: float, absent: frozenset[str]) -> bool:
    every = [e for chosen in bound.values() for e in chosen]
    if len({(e["type"], e["id"]) for e in every}) < len(every):
        return False
    stamps = [e["ts"] for e in every]
    if max(stamps) - min(stamps) > window:
        return False
    if pattern.operator == "SEQ" and not _in_sequence(operands, bound, strict):
        return False
    binding = _binding(pattern, bound)
    negated = {o.var for o in pattern.negated}
    for pred in pattern.predicates:
        if pred.variables & negated or _defines_absent(pattern, pred, absent):
            continue
        if pred.variables & absent:
            if truth(pred.expr, binding, absent, pattern.kleene_vars) is not True:
                return False
            continue
        applies = pred.variables <= set(binding)
        if applies and not holds(pred.expr, binding, pattern.kleene_vars):
            return False
    return not any(_blocked(pattern, x, operands, bound, events, strict, window, absent)
                   for x in pattern.negated)


def _in_sequence(operands: Sequence, bound: dict, strict: bool) -> bool:
    ordered = sorted(operands, key=lambda o: o.position)
    for i, earlier in enumerate(ordered):
        for later in ordered[i + 1:]:
            for e in bound[earlier.var]:
                for f in bound[later.var]:
                    if not _precedes(e, f, strict):
                        return False
    return True


def _binding(pattern: Pattern, bound: dict) -> dict:
    return {var: (chosen if pattern.operand(var).kind == KLEENE else chosen[0])
            for var, chosen in bound.items()}


def _blocked(pattern: Pattern, negated, operands: Sequence, bound: dict, events: list[dict],
             strict: bool, window: float, absent: frozenset[str]) -> bool:
    every = [e for chosen in bound.values() for e in chosen]
    used = {(e["type"], e["id"]) for e in every}
    binding = _binding(pattern, bound)
    for event in events:
        if event["type"] != negated.event_type or (event["type"], event["id"]) in used:
            continue
        stamps = [e["ts"] for e in every] + [event["ts"]]
        if max(stamps) - min(stamps) > window:
            continue
        if pattern.operator == "SEQ":
            before = [e for o in operands if o.position < negated.position for e in bound[o.var]]
            after = [e for o in operands if o.position > negated.position for e in bound[o.var]]
            if not all(_precedes(e, event, strict) for e in before):
                continue
            if not all(_precedes(event, e, strict) for e in after):
                continue
        trial = {**binding, negated.var: event}
        if all(truth(p.expr, trial, absent, pattern.kleene_vars) is True
               for p in pattern.predicates if negated.var in p.variables):
            return True
    return False


def _object(pattern: Pattern, bound: dict) -> dict:
    events = {}
    for var, chosen in bound.items():
        shown = [_shown(e) for e in chosen]
        events[var] = shown if pattern.operand(var).kind == KLEENE else shown[0]
    return {"pattern": pattern.name, "events": events}


def _shown(event: dict) -> dict:
    return {k: plain_value(v) for k, v in event.items() if k != "_object"} | event.get(
        "_object", {})


def _complex_event(pattern: Pattern, match: dict) -> dict:
    bound = match["bound"]
    binding = _binding(pattern, bound)
    event = {"id": complex_event_id(pattern.name,
                                    {v: [e["id"] for e in c] for v, c in bound.items()}),
             "type": pattern.name,
             "ts": max(e["ts"] for c in bound.values() for e in c)}
    for attr, expr in pattern.emit.items():
        event[attr] = plain_value(value_of(expr, binding, pattern.kleene_vars))
    event["_object"] = match["object"]
    return event


def canonical(obj: dict) -> tuple:
    """A match object reduced to what identifies it: pattern and the ids each variable binds
    (a complex subevent by its own canonical form)."""
    parts = []
    for var in sorted(obj["events"]):
        value = obj["events"][var]
        items = value if isinstance(value, list) else [value]
        parts.append((var, tuple(canonical(i) if "events" in i else (i["type"], i["id"])
                                 for i in items)))
    return (obj["pattern"], tuple(parts))

