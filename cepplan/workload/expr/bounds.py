"""Which attribute of a variable a predicate bounds, and by what (docs/matching.md, "Indexed
joins"): `a.x < b.x`, `a.x == b.x`, `0 < b.x - a.x < 3` and `abs(a.x - b.x) < d` bound `b.x` by
an expression of `a`, so a join binding `b` after `a` can look its candidates up by value. The
matcher narrows its look-ups with these bounds; the planner prices the join orders whose
steps they narrow. Over portable expression trees (`portable.py`), nothing evaluated here.
"""

from __future__ import annotations

from dataclasses import dataclass

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


@dataclass(frozen=True)
class Bound:
    """One side of a value range of `var.attr`: `tree` over the variables already bound
    (`lower`: var.attr >= tree, else <=), `size` the size of the terms moved across (None:
    none moved, the bound is the predicate's own value); `exact` when it comes from `==` (an
    attribute of any type, text too, can be looked up by it)."""

    attr: str
    tree: list
    lower: bool
    size: list | None
    exact: bool = False


def bounds_of(tree: list, var: str) -> list[Bound]:
    """The bounds a predicate (a conjunction of comparisons) puts on one attribute of `var`
    in terms of the other variables; [] when it reads `var` otherwise."""
    if tree[0] == "and":
        return bounds_of(tree[1], var) + bounds_of(tree[2], var)
    if tree[0] not in _FLIP:
        return []
    op, left, right = tree
    if _reads(left, var) == _reads(right, var):
        return []
    if _reads(right, var):
        op, left, right = _FLIP[op], right, left
    if left[0] == "call" and left[1] == "abs" and len(left) == 3 and op in ("<", "<="):
        found = _linear(left[2], var)
        if found is None:
            return []
        sign, attr, rest = found
        size = _add(_size(right), _size(rest))
        centre = _neg(rest) if sign > 0 else rest  # sign·x + rest in [-d, d]
        return [Bound(attr, _sub(centre, right), True, size),
                Bound(attr, _add(centre, right), False, size)]
    found = _linear(left, var)
    if found is None:
        return []
    sign, attr, rest = found  # sign·x + rest OP right
    bound = _sub(right, rest) if sign > 0 else _sub(rest, right)
    if sign < 0:
        op = _FLIP[op]
    size = None if rest is None else _add(_size(right), _size(rest))
    if op == "==":
        return [Bound(attr, bound, True, size, True), Bound(attr, bound, False, size, True)]
    return [Bound(attr, bound, op in (">", ">="), size)]


def _reads(tree: list, var: str) -> bool:
    head = tree[0]
    if head == "attr":
        return tree[1] == var
    if head == "kleene":
        return tree[2] == var
    if head == "lit":
        return False
    return any(_reads(sub, var) for sub in tree[2 if head == "call" else 1:])


def _linear(tree: list, var: str) -> tuple[int, str, list | None] | None:
    """`tree` as sign·var.attr + rest (rest free of var, None for nothing), or None when
    it is not of that form (var read once, through + - and unary minus only)."""
    head = tree[0]
    if head == "attr" and tree[1] == var:
        return 1, tree[2], None
    if head == "kleene" and tree[1] == "LAST" and tree[2] == var:
        return 1, tree[3], None
    if head == "neg":
        found = _linear(tree[1], var)
        return None if found is None else (-found[0], found[1], _neg(found[2]))
    if head not in ("+", "-") or _reads(tree[1], var) == _reads(tree[2], var):
        return None
    if _reads(tree[1], var):
        found = _linear(tree[1], var)
        if found is None:
            return None
        sign, attr, rest = found
        return sign, attr, (_add if head == "+" else _sub)(rest, tree[2])
    found = _linear(tree[2], var)
    if found is None:
        return None
    sign, attr, rest = found
    if head == "+":
        return sign, attr, _add(tree[1], rest)
    return -sign, attr, _sub(tree[1], rest)


def _add(a: list | None, b: list | None) -> list | None:
    return b if a is None else a if b is None else ["+", a, b]


def _sub(a: list | None, b: list | None) -> list | None:
    if b is None:
        return a
    return _neg(b) if a is None else ["-", a, b]


def _neg(a: list | None) -> list | None:
    return None if a is None else ["neg", a]


def _size(tree: list | None) -> list | None:
    """The sum of the sizes of a sum's terms (each term's absolute value)."""
    if tree is None:
        return None
    if tree[0] in ("+", "-"):
        return ["+", _size(tree[1]), _size(tree[2])]
    if tree[0] == "neg":
        return _size(tree[1])
    return ["call", "abs", tree]
