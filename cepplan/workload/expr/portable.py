"""Expression trees as plain JSON lists: the form that travels in plan files and Spark jobs.

    ["lit", value]            ["attr", var, attr]        ["kleene", FUNC, var, attr]
    ["neg", x]  ["not", x]    [op, left, right]          ["call", func, arg, ...]

The generated job evaluates this form with `cepplan.workload.expr.vectorized`; no text from a
workload is ever turned into code.
"""

from __future__ import annotations

from typing import Any

from cepplan.workload.expr.ast import Attr, Binary, Call, Expr, KleeneRef, Literal, Unary
from cepplan.workload.expr.errors import ExprError


def to_portable(expr: Expr) -> list[Any]:
    """The JSON-list form of a typed tree."""
    if isinstance(expr, Literal):
        return ["lit", expr.value]
    if isinstance(expr, Attr):
        return ["attr", expr.var, expr.attr]
    if isinstance(expr, KleeneRef):
        return ["kleene", expr.func, expr.ref.var, expr.ref.attr]
    if isinstance(expr, Unary):
        return ["not" if expr.op == "not" else "neg", to_portable(expr.operand)]
    if isinstance(expr, Call):
        return ["call", expr.func, *(to_portable(a) for a in expr.args)]
    return [expr.op, to_portable(expr.left), to_portable(expr.right)]


def from_portable(tree: Any) -> Expr:
    """Rebuild a typed tree from its JSON-list form (for plan files read back)."""
    if not isinstance(tree, list) or not tree or not isinstance(tree[0], str):
        raise ExprError(f"not an expression tree: {tree!r:.80}", 0)
    head = tree[0]
    if head == "lit":
        value = tree[1]
        kind = {bool: "bool", int: "long", float: "double", str: "string"}.get(type(value))
        if kind is None:
            raise ExprError(f"bad literal {value!r:.80}", 0)
        return Literal(value, kind)
    if head == "attr":
        return Attr(tree[1], tree[2])
    if head == "kleene":
        return KleeneRef(tree[1], Attr(tree[2], tree[3]))
    if head in ("neg", "not"):
        return Unary("-" if head == "neg" else "not", from_portable(tree[1]))
    if head == "call":
        return Call(tree[1], tuple(from_portable(a) for a in tree[2:]))
    return Binary(head, from_portable(tree[1]), from_portable(tree[2]))
