"""Vectorised evaluation of portable expression trees over NumPy columns.

Standalone on purpose: this module imports only NumPy, so the generated Spark job ships it
inside its runtime zip (DESIGN.md, "The generated Spark job") without the rest of cepplan.

`columns` maps keys to equal-length arrays: `(var, attr)` for `var.attr`, and
`(FUNC, var, attr)` for `FIRST/LAST/NEXT/PREV(var.attr)`; the caller lays out the rows (one per
candidate binding). Semantics match `cepplan.workload.expr.evaluate`: `/` and `%` are real-valued
with NaN for a zero divisor, comparisons with NaN are false, `min`/`max` propagate NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "!=": np.not_equal}


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
        return tree[1]
    if head == "attr":
        return columns[(tree[1], tree[2])]
    if head == "kleene":
        return columns[(tree[1], tree[2], tree[3])]
    if head == "neg":
        return np.negative(_eval(tree[1], columns))
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
        if head == "+":
            return np.add(left, right)
        if head == "-":
            return np.subtract(left, right)
        if head == "*":
            return np.multiply(left, right)
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
    return _COMPARE[op](left, right)


def _is_text(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "OUS"


def _call(func: str, args: list[Any]) -> Any:
    if func == "abs":
        return np.abs(args[0])
    if func == "min":
        return np.minimum.reduce(np.broadcast_arrays(*args))
    if func == "max":
        return np.maximum.reduce(np.broadcast_arrays(*args))
    if func == "distance":
        x1, y1, x2, y2 = (np.asarray(a, dtype=np.float64) for a in args)
        return np.hypot(x1 - x2, y1 - y2)
    raise ValueError(f"unknown function {func!r}")
