"""Vectorised evaluation of portable expression trees over NumPy columns.

Standalone on purpose: this module imports only NumPy, so the generated Spark job ships it
inside its runtime zip (DESIGN.md, "The generated Spark job") without the rest of cepplan.

`columns` maps keys to equal-length arrays: `(var, attr)` for `var.attr`, and
`(FUNC, var, attr)` for `FIRST/LAST/NEXT/PREV(var.attr)`; the caller lays out the rows (one per
candidate binding). Semantics match `cepplan.workload.expr.evaluate`: `/` and `%` are real-valued
with NaN for a zero divisor, comparisons with NaN are false, `min`/`max` propagate NaN; whole
numbers are exact: `+ - *`, unary minus and `abs` on int64 compute in int64 and, where a result
would wrap around, the whole operation again on Python integers (an object array); a whole
number meets a double as a double (in comparisons, `min`, `max` and arithmetic alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "!=": np.not_equal}
_ARITHMETIC = {"+": np.add, "-": np.subtract, "*": np.multiply}
_EXACT = 2.0 ** 62  # a product of int64 whose float estimate stays below this cannot wrap
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def evaluate(tree: list[Any], columns: Mapping[tuple, np.ndarray], length: int) -> np.ndarray:
    """Evaluate a tree for `length` rows at once; returns an array of `length` values."""
    value = _eval(tree, columns)
    if np.ndim(value) == 0:
        return np.full(length, value)
    return value


def referenced_keys(tree: list[Any]) -> set[tuple]:
    """The column keys a tree reads."""
    head = tree[0]
    if head == "lit":
        return set()
    if head == "attr":
        return {(tree[1], tree[2])}
    if head == "kleene":
        return {(tree[1], tree[2], tree[3])}
    start = 2 if head == "call" else 1
    keys: set[tuple] = set()
    for sub in tree[start:]:
        keys |= referenced_keys(sub)
    return keys


def _eval(tree: list[Any], columns: Mapping[tuple, np.ndarray]) -> Any:
    head = tree[0]
    if head == "lit":
        return _beyond_int64_as_object(tree[1])
    if head == "attr":
        return columns[(tree[1], tree[2])]
    if head == "kleene":
        return columns[(tree[1], tree[2], tree[3])]
    if head == "neg":
        return _whole_unary(np.negative, _eval(tree[1], columns))
    if head == "not":
        return np.logical_not(_eval(tree[1], columns))
    if head == "call":
        return _call(tree[1], [_eval(a, columns) for a in tree[2:]])
    left, right = _eval(tree[1], columns), _eval(tree[2], columns)
    if head == "and":
        return np.logical_and(left, right)
    if head == "or":
        return np.logical_or(left, right)
    if head in _COMPARE:
        return _compare(head, left, right)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if head in _ARITHMETIC:
            return _arithmetic(head, left, right)
        left_f = np.asarray(left, dtype=np.float64)
        right_f = np.asarray(right, dtype=np.float64)
        zero = right_f == 0
        if head == "/":
            return np.where(zero, np.nan, np.divide(left_f, np.where(zero, 1.0, right_f)))
        if head == "%":
            return np.where(zero, np.nan, np.mod(left_f, np.where(zero, 1.0, right_f)))
    raise ValueError(f"unknown operator {head!r}")


def _compare(op: str, left: Any, right: Any) -> Any:
    if _is_text(left) or _is_text(right):  # strings: compare as Python objects, elementwise
        left_o = np.asarray(left, dtype=object)
        right_o = np.asarray(right, dtype=object)
        return np.asarray(_COMPARE[op](left_o, right_o), dtype=bool)
    left, right = _as_doubles_if_any([left, right])
    return np.asarray(_COMPARE[op](left, right), dtype=bool)


def _is_text(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return (isinstance(value, np.ndarray) and value.dtype.kind in "OUS"
            and not _is_big_whole(value))


def _is_big_whole(value: Any) -> bool:
    """An object array of Python integers (a whole-number result beyond int64)."""
    return (isinstance(value, np.ndarray) and value.dtype == object and value.size > 0
            and isinstance(value.flat[0], int) and not isinstance(value.flat[0], bool))


def _is_whole(value: Any) -> bool:
    """A whole number: an int64 array or scalar, or Python integers (not flags)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    return isinstance(value, np.ndarray) and (value.dtype.kind in "iu" or _is_big_whole(value))


def _as_doubles_if_any(values: list[Any]) -> list[Any]:
    """The values as they meet: all as doubles when one is a double (as NumPy and Spark
    compare a long with a double), else as they are."""
    if all(_is_whole(v) for v in values) or not any(_is_big_whole(v) for v in values):
        return values
    return [np.asarray(v, dtype=np.float64) if _is_big_whole(v) else v for v in values]


def _arithmetic(op: str, left: Any, right: Any) -> Any:
    """`+ - *`: whole numbers exactly (int64, or Python integers where int64 would wrap),
    anything else as NumPy computes it."""
    if not (_is_whole(left) and _is_whole(right)):
        return _ARITHMETIC[op](*_as_doubles_if_any([left, right]))
    if _is_big_whole(left) or _is_big_whole(right):
        return _beyond_int64_as_object(_ARITHMETIC[op](_python_ints(left), _python_ints(right)))
    a, b = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    result = _ARITHMETIC[op](a, b)
    if op == "*":
        wraps = np.abs(a.astype(np.float64) * b.astype(np.float64)) >= _EXACT
    else:  # the sign of a sum or difference flips exactly when it wraps
        wraps = ((a ^ result) & ((b if op == "+" else ~b) ^ result)) < 0
    if not np.any(wraps):
        return result
    return _beyond_int64_as_object(_ARITHMETIC[op](_python_ints(a), _python_ints(b)))


def _beyond_int64_as_object(value: Any) -> Any:
    """A Python integer outside int64 as a 0-d object array, so that it stays exact: NumPy
    would read it as a uint64 (negating it wraps) or refuse it beside an int64 column."""
    if (isinstance(value, int) and not isinstance(value, bool)
            and not _INT64_MIN <= value <= _INT64_MAX):
        return np.asarray(value, dtype=object)
    return value


def _python_ints(value: Any) -> np.ndarray:
    """Whole numbers as an object array of Python integers (NumPy's would wrap again)."""
    return np.asarray(value).astype(object)


def _whole_unary(function: Any, value: Any) -> Any:
    """Unary minus or `abs`, exact on int64's most negative value (its negation is no
    int64)."""
    if (isinstance(value, np.ndarray) and value.dtype == np.int64
            and np.any(value == np.iinfo(np.int64).min)):
        return function(value.astype(object))
    if isinstance(value, np.int64) and value == np.iinfo(np.int64).min:
        return function(int(value))
    return _beyond_int64_as_object(function(value))


def _call(func: str, args: list[Any]) -> Any:
    if func == "abs":
        return _whole_unary(np.abs, args[0])
    if not all(_is_whole(a) for a in args):  # min and max: doubles when one is a double
        args = [np.asarray(a, dtype=np.float64) for a in args]
    if func == "min":
        return np.minimum.reduce(np.broadcast_arrays(*args))
    if func == "max":
        return np.maximum.reduce(np.broadcast_arrays(*args))
    if func == "distance":
        x1, y1, x2, y2 = (np.asarray(a, dtype=np.float64) for a in args)
        return np.hypot(x1 - x2, y1 - y2)
    raise ValueError(f"unknown function {func!r}")
