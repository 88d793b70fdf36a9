"""A core pattern that leaves optional variables unbound (alternation.choices): without their
operands, and with the predicates that read them rewritten for SQL's NULL.

Semantics (format doc, "Optional variables"): an absent variable's conditions (the predicates
reading it and otherwise only variables written before it, its DEFINE in MATCH_RECOGNIZE) are
not evaluated; any other predicate reading it is evaluated with its attributes NULL under
SQL's three-valued logic, and holds only when TRUE. The rewrite keeps, per predicate, the
condition on the present variables under which it is TRUE (False: never).
"""

from __future__ import annotations

from dataclasses import replace

from cepplan.workload.expr.ast import Attr, Binary, Expr, KleeneRef, Unary, walk
from cepplan.workload.expr.evaluate import holds
from cepplan.workload.expr.printer import to_text
from cepplan.workload.model import FILTER, JOIN, KLEENE_INTERNAL, NEGATED, Pattern, Predicate


def without(pattern: Pattern, absent: frozenset[str]) -> Pattern | None:
    """`pattern` with the variables `absent` unbound, or None when no match can then exist
    (a predicate on present variables is never TRUE)."""
    if not absent:
        return pattern
    position = {o.var: o.position for o in pattern.operands}
    dropped_negations: set[str] = set()
    kept: list[tuple[Predicate, Expr]] = []
    for predicate in pattern.predicates:
        read = predicate.variables & absent
        if not read:
            kept.append((predicate, predicate.expr))
            continue
        last = max(read, key=position.__getitem__)
        others = predicate.variables - {last}
        if all(position[v] < position[last] and pattern.operand(v).kind != NEGATED
               for v in others):
            continue  # a condition of the absent variable: not evaluated
        residual = when_true(predicate.expr, absent)
        if residual is not False and not _variables(residual):  # a constant such as `1 < 2`
            if holds(residual, {}):
                continue
            residual = False
        if residual is False:
            negated = [v for v in predicate.variables - absent
                       if pattern.operand(v).kind == NEGATED]
            if not negated:
                return None
            dropped_negations.update(negated)  # it never qualifies: nothing is excluded
            continue
        kept.append((predicate, residual))
    gone = absent | dropped_negations
    operands = [o for o in sorted(pattern.operands, key=lambda o: o.position)
                if o.var not in gone]
    predicates = tuple(_predicate(p, expr) for p, expr in kept
                       if not _variables(expr) & gone)
    return replace(pattern, operands=tuple(replace(o, position=i)
                                           for i, o in enumerate(operands)),
                   predicates=predicates, strategy=_strategy(pattern, operands))


def when_true(expr: Expr, absent: frozenset[str]) -> Expr | bool:
    """When `expr` is TRUE with the `absent` variables' attributes NULL: an expression over
    the other variables, or False (never)."""
    if isinstance(expr, Binary) and expr.op in ("and", "or"):
        return _join(expr.op, when_true(expr.left, absent), when_true(expr.right, absent))
    if isinstance(expr, Unary) and expr.op == "not":
        return _when_false(expr.operand, absent)
    return False if _variables(expr) & absent else expr


def _when_false(expr: Expr, absent: frozenset[str]) -> Expr | bool:
    """When `expr` is FALSE (not NULL, not TRUE) with the `absent` variables NULL."""
    if isinstance(expr, Binary) and expr.op in ("and", "or"):
        dual = "or" if expr.op == "and" else "and"
        return _join(dual, _when_false(expr.left, absent), _when_false(expr.right, absent))
    if isinstance(expr, Unary) and expr.op == "not":
        return when_true(expr.operand, absent)
    return False if _variables(expr) & absent else Unary("not", expr)


def _join(op: str, left: Expr | bool, right: Expr | bool) -> Expr | bool:
    if op == "and":
        return False if left is False or right is False else Binary("and", left, right)
    if left is False:
        return right
    return left if right is False else Binary("or", left, right)


def _predicate(predicate: Predicate, expr: Expr) -> Predicate:
    if expr is predicate.expr:
        return predicate
    variables = frozenset(_variables(expr))
    internal = any(isinstance(n, KleeneRef) and n.func in ("NEXT", "PREV") for n in walk(expr))
    kind = KLEENE_INTERNAL if internal else (FILTER if len(variables) == 1 else JOIN)
    return Predicate(to_text(expr), expr, variables, kind, predicate.index)


def _strategy(pattern: Pattern, operands: list) -> str | dict[str, str]:
    """The strategy object without the variables now unbound or first in the match."""
    if isinstance(pattern.strategy, str):
        return pattern.strategy
    positive = [o.var for o in operands if o.kind != NEGATED]
    return {v: s for v, s in pattern.strategy.items() if v in positive[1:]}


def _variables(expr: Expr) -> set[str]:
    return {n.var if isinstance(n, Attr) else n.ref.var
            for n in walk(expr) if isinstance(n, Attr | KleeneRef)}
