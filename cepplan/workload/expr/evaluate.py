"""Evaluation of a typed expression tree for one binding of events (tests, reference matcher).

A binding maps each variable to one event (a mapping attribute -> value, with `ts`) or, for a
KLEENE variable, to the list of its events in time order. A plain reference `b.x` to a KLEENE
variable must hold for every event of the binding; `NEXT(b.x)`/`PREV(b.x)` for every consecutive
pair; `FIRST`/`LAST` read the first/last event (seed 001 §2.4). With a single Kleene event,
`b.x < NEXT(b.x)` holds vacuously. Arithmetic mirrors `vectorized`: `/` and `%` are real-valued,
NaN for a zero divisor; comparisons with NaN are false; whole numbers are exact (Python
integers, never wrapping at 64 bits); a whole number meeting a double is read as a double (in
comparisons, `min` and `max` as in arithmetic), as NumPy and Spark compare them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from cepplan.workload.expr.ast import Attr, Binary, Call, Expr, KleeneRef, Literal, Unary, walk

Event = Mapping[str, Any]
Binding = Mapping[str, "Event | Sequence[Event]"]


def holds(expr: Expr, binding: Binding, kleene_vars: frozenset[str] = frozenset()) -> bool:
    """Whether a predicate holds for a binding (Kleene variables quantified as documented)."""
    ranges = _kleene_index_ranges(expr, binding, kleene_vars)
    names = list(ranges)
    for indices in itertools.product(*(ranges[n] for n in names)):
        position = dict(zip(names, indices, strict=True))
        if not bool(_eval(expr, binding, kleene_vars, position)):
            return False
    return True


def value_of(expr: Expr, binding: Binding, kleene_vars: frozenset[str] = frozenset()) -> Any:
    """The value of an expression that reads no Kleene variable per event (an `emit` value)."""
    return _eval(expr, binding, kleene_vars, {})


def _kleene_index_ranges(
    expr: Expr, binding: Binding, kleene_vars: frozenset[str]
) -> dict[str, range]:
    """Per Kleene variable read per-event, the event positions the predicate is checked at."""
    uses: dict[str, set[str]] = {}
    for node in walk(expr):
        if isinstance(node, Attr) and node.var in kleene_vars:
            uses.setdefault(node.var, set()).add("plain")
        elif isinstance(node, KleeneRef) and node.func in ("NEXT", "PREV"):
            uses.setdefault(node.ref.var, set()).add(node.func)
    ranges = {}
    for var, kinds in uses.items():
        count = len(binding[var])
        low = 1 if "PREV" in kinds else 0
        high = count - 1 if "NEXT" in kinds else count
        ranges[var] = range(low, high)
    return ranges


def _eval(expr: Expr, binding: Binding, kleene_vars: frozenset[str], pos: dict[str, int]) -> Any:
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, Attr):
        event = binding[expr.var]
        if expr.var in kleene_vars:
            event = event[pos[expr.var]]
        return event[expr.attr]
    if isinstance(expr, KleeneRef):
        events = binding[expr.ref.var]
        index = {"FIRST": 0, "LAST": -1}.get(expr.func)
        if index is None:
            index = pos[expr.ref.var] + (1 if expr.func == "NEXT" else -1)
        return events[index][expr.ref.attr]
    if isinstance(expr, Unary):
        value = _eval(expr.operand, binding, kleene_vars, pos)
        return (not value) if expr.op == "not" else -value
    if isinstance(expr, Call):
        args = [_eval(a, binding, kleene_vars, pos) for a in expr.args]
        return _call(expr.func, args)
    return _binary(expr, binding, kleene_vars, pos)


def _binary(
    expr: Binary, binding: Binding, kleene_vars: frozenset[str], pos: dict[str, int]
) -> Any:
    left = _eval(expr.left, binding, kleene_vars, pos)
    right = _eval(expr.right, binding, kleene_vars, pos)
    op = expr.op
    if op == "and":
        return bool(left) and bool(right)
    if op == "or":
        return bool(left) or bool(right)
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        return math.nan if right == 0 else float(left) / float(right)
    if op == "%":
        return math.nan if right == 0 else float(left) % float(right)
    return _compare(op, left, right)


def _compare(op: str, left: Any, right: Any) -> bool:
    left, right = _doubles_if_any([left, right])
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    if op == ">=":
        return left >= right
    if op == "==":
        return left == right
    return left != right


def _call(func: str, args: list[Any]) -> Any:
    if func == "abs":
        return abs(args[0])
    if func == "distance":
        x1, y1, x2, y2 = (float(a) for a in args)
        return math.hypot(x1 - x2, y1 - y2)
    if any(isinstance(a, float) and math.isnan(a) for a in args):
        return math.nan
    args = _doubles_if_any(args)
    return min(args) if func == "min" else max(args)


def _doubles_if_any(values: list[Any]) -> list[Any]:
    """Whole numbers as doubles when one of `values` is a double (flags and text as they
    are)."""
    if not any(isinstance(v, float) for v in values):
        return values
    return [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values]
