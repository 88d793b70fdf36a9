"""Portable expression trees -> native Spark Column expressions (filter push-down without Python).

Shipped in the job's runtime zip. A tree is data (`cepplan.workload.expr.portable`); this
module builds Spark Columns from it node by node, so nothing from a workload is executed as
code. Semantics follow `cepplan.workload.expr.vectorized` (and the reference evaluator):
`/` and `%` are real-valued with NaN for a zero divisor, `%` takes the divisor's sign (NumPy's
`mod`), a comparison involving NaN is false (Spark would order NaN above every number),
`min`/`max` propagate NaN; whole-number `+ - *`, unary minus and `abs` are exact, computed as
38-digit decimals (any two longs' result fits; a filter whose whole numbers pass 10^38, a
product of three longs near their limit, is false), a whole number meeting a double is a
double.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

NUMERIC = ("double", "long")
_NAN = float("nan")
_WHOLE = "decimal(38,0)"  # long arithmetic, exact where int64 would overflow (ANSI: an error)
_EXACT = {"+": F.try_add, "-": F.try_subtract, "*": F.try_multiply}  # NULL beyond 38 digits
_COMPARE: dict[str, Callable[[Column, Column], Column]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}

Resolve = Callable[[str], tuple[Column, str]]  # attribute name -> (column, type)


def column_of(tree: list[Any], resolve: Resolve) -> Column:
    """The Column computing `tree` for one event, attributes looked up by `resolve` (one
    variable's plain reads: `["attr", var, attr]`)."""
    return _compile(tree, resolve)[0]


def attribute_resolver(columns: Mapping[str, str], ts_column: str) -> Resolve:
    """Resolve `attr` to the column of that name (its type from `columns`); `ts` is the event's
    timestamp column."""
    def resolve(attr: str) -> tuple[Column, str]:
        if attr == "ts":
            return F.col(ts_column), "double"
        return F.col(attr), columns.get(attr, "double")
    return resolve


def _compile(tree: list[Any], resolve: Resolve) -> tuple[Column, str]:
    head = tree[0]
    if head == "lit":
        value = tree[1]
        kind = {bool: "bool", int: "long", float: "double", str: "string"}[type(value)]
        return F.lit(value), kind
    if head == "attr":
        return resolve(tree[2])
    if head == "kleene":
        raise ValueError("Kleene functions are evaluated by the matcher, not pushed down")
    if head == "neg":
        value, kind = _compile(tree[1], resolve)
        return (-value.cast(_WHOLE) if kind == "long" else -value), kind
    if head == "not":
        return ~_compile(tree[1], resolve)[0], "bool"
    if head == "call":
        return _call(tree[1], [_compile(a, resolve) for a in tree[2:]])
    (left, lkind), (right, rkind) = _compile(tree[1], resolve), _compile(tree[2], resolve)
    if head == "and":
        return left & right, "bool"
    if head == "or":
        return left | right, "bool"
    if head in _COMPARE:
        result = _COMPARE[head](left, right)
        if lkind in NUMERIC and rkind in NUMERIC:
            result = result & ~_is_nan(left) & ~_is_nan(right)
        return result, "bool"
    if head in _EXACT and lkind == rkind == "long":
        return _EXACT[head](left.cast(_WHOLE), right.cast(_WHOLE)), "long"
    if head == "+":
        return left + right, "double"
    if head == "-":
        return left - right, "double"
    if head == "*":
        return left * right, "double"
    left_d, right_d = left.cast("double"), right.cast("double")
    if head == "/":
        return F.when(right_d == 0, F.lit(_NAN)).otherwise(F.try_divide(left_d, right_d)), \
            "double"
    if head == "%":
        return F.when(right_d == 0, F.lit(_NAN)).otherwise(F.pmod(left_d, right_d)), "double"
    raise ValueError(f"unknown operator {head!r:.40}")


def _call(func: str, args: list[tuple[Column, str]]) -> tuple[Column, str]:
    values = [a[0] for a in args]
    kind = "long" if all(a[1] == "long" for a in args) else "double"
    if func == "abs":
        kind = args[0][1]
        return F.abs(values[0].cast(_WHOLE) if kind == "long" else values[0]), kind
    if func in ("min", "max"):
        pick = F.least(*values) if func == "min" else F.greatest(*values)
        if kind == "long":
            return pick, kind
        nan = _is_nan(values[0])
        for value in values[1:]:
            nan = nan | _is_nan(value)
        return F.when(nan, F.lit(_NAN)).otherwise(pick.cast("double")), kind
    if func == "distance":
        x1, y1, x2, y2 = (v.cast("double") for v in values)
        return F.hypot(x1 - x2, y1 - y2), "double"
    raise ValueError(f"unknown function {func!r:.40}")


def _is_nan(value: Column) -> Column:
    return F.isnan(value.cast("double"))
