"""Typed expression trees for workload predicates (format doc, "The expression language").

Nodes are frozen dataclasses; `pos` (the character offset in the source text) is kept for error
messages and ignored by equality, so a tree printed and parsed again compares equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ARITHMETIC = ("+", "-", "*", "/", "%")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
LOGICAL = ("and", "or")
FUNCTIONS = ("abs", "min", "max", "distance")
KLEENE_FUNCTIONS = ("FIRST", "LAST", "NEXT", "PREV")


@dataclass(frozen=True)
class Literal:
    """A number, string or boolean constant; `type` is one of the schema types."""

    value: float | int | str | bool
    type: str
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Attr:
    """`var.attr`: an attribute of the event bound to a variable."""

    var: str
    attr: str
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class KleeneRef:
    """`FIRST(b.x)`, `LAST(b.x)`, `NEXT(b.x)`, `PREV(b.x)` over a Kleene variable's events."""

    func: str
    ref: Attr
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Unary:
    """`-x` or `not x`."""

    op: str
    operand: Expr
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Binary:
    """Arithmetic, comparison or logical operator with two operands."""

    op: str
    left: Expr
    right: Expr
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Call:
    """`abs(x)`, `min(x, y, ...)`, `max(x, y, ...)`, `distance(x1, y1, x2, y2)`."""

    func: str
    args: tuple[Expr, ...]
    pos: int = field(default=0, compare=False)


Expr = Literal | Attr | KleeneRef | Unary | Binary | Call


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of a node."""
    if isinstance(expr, Unary):
        return (expr.operand,)
    if isinstance(expr, Binary):
        return (expr.left, expr.right)
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, KleeneRef):
        return (expr.ref,)
    return ()


def walk(expr: Expr):
    """Yield every node of the tree, parents before children (iterative: no recursion limit)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))
