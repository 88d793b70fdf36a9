"""Selection strategies of a SEQ pattern (`strategy`: any, next, strict), as rewrites into the
core language: hidden negated operands, which the planner, both engines and the cost models
already evaluate, so a strategy needs no engine code of its own.

Semantics (format doc, "Selection strategies"), for consecutive positive variables x, y:
- `next` (FlinkCEP `followedBy`, CORE `NEXT`): no event other than the match's own, of y's
  type and satisfying y's conditions, lies after x and strictly before y's timestamp.
  Rewrite: `["NOT", "__next_y:Y"]` between x and y carrying y's conditions.
- `strict` (FlinkCEP `next`, MATCH_RECOGNIZE's default): no event of the partition other than
  the match's own has a timestamp strictly between x's and y's. Rewrite: one hidden `NOT` per
  primitive event type between x and y.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

from cepplan.workload.expr.ast import Attr, Binary, Call, Expr, KleeneRef, Unary, walk
from cepplan.workload.expr.printer import to_text
from cepplan.workload.model import FILTER, JOIN, KLEENE, NEGATED, Operand, Pattern, Predicate

STRATEGIES = ("any", "next", "strict")


def strategy_problem(pattern: Pattern, strategy: str) -> str | None:
    """Why `strategy` cannot apply to `pattern`, or None when it can."""
    if strategy == "any":
        return None
    if pattern.operator != "SEQ":
        return (f"strategy {strategy!r} orders events: it applies to a SEQ pattern, not "
                f"{pattern.operator}")
    kleene = [o.var for o in pattern.operands if o.kind == KLEENE]
    if kleene:
        return (f"strategy {strategy!r} is not supported with a KLEENE operand "
                f"({', '.join(kleene)}); use strategy \"any\"")
    complex_ = [o.var for o in pattern.positive if o.is_complex]
    if complex_:
        return (f"strategy {strategy!r} applies between primitive events; "
                f"{', '.join(complex_)} binds another pattern's matches")
    return None


def apply_strategy(pattern: Pattern, strategy: str, event_types: dict,
                   ties_allowed: bool) -> Pattern:
    """The core pattern equivalent to `pattern` under `strategy` (module doc); `event_types`
    are the workload's primitive types, `ties_allowed` whether `seq_ties` is `allow`."""
    if strategy == "any":
        return pattern
    ordered = sorted(pattern.operands, key=lambda o: o.position)
    positives = [o for o in ordered if o.kind != NEGATED]
    extra_operands: dict[str, list[Operand]] = {}
    extra_predicates: list[Expr] = []
    for before, after in pairwise(positives):
        if strategy == "next":
            hidden = f"__next_{after.var}"  # users cannot bind names beginning with "__"
            extra_operands[after.var] = [_negated(hidden, after.event_type)]
            extra_predicates += _next_conditions(pattern, positives, after, hidden)
            if ties_allowed:
                extra_predicates.append(_ts(hidden, "<", after.var))
        else:
            extra_operands[after.var] = []
            for index, type_name in enumerate(sorted(event_types)):
                attributes = event_types[type_name].attributes
                if not all(k in attributes for k in pattern.partition_by):
                    continue  # no event of this type is in any partition
                hidden = f"__strict_{after.var}_{index}"
                extra_operands[after.var].append(_negated(hidden, type_name))
                if ties_allowed:
                    extra_predicates.append(_ts(hidden, ">", before.var))
                    extra_predicates.append(_ts(hidden, "<", after.var))
    operands: list[Operand] = []
    for operand in ordered:
        for hidden in extra_operands.get(operand.var, ()):
            operands.append(replace(hidden, position=len(operands)))
        operands.append(replace(operand, position=len(operands)))
    predicates = list(pattern.predicates)
    for expr in extra_predicates:
        variables = frozenset(_variables(expr))
        kind = FILTER if len(variables) == 1 else JOIN
        predicates.append(Predicate(to_text(expr), expr, variables, kind, len(predicates)))
    return replace(pattern, operands=tuple(operands), predicates=tuple(predicates))


def _next_conditions(pattern: Pattern, positives: list[Operand], target: Operand,
                     hidden: str) -> list[Expr]:
    """y's conditions (the predicates on y over variables bound before it), read on `hidden`."""
    earlier = {o.var for o in positives if o.position < target.position}
    negated = {o.var for o in pattern.negated}
    out = []
    for predicate in pattern.predicates:
        others = predicate.variables - {target.var}
        if target.var in predicate.variables and others <= earlier and not others & negated:
            out.append(rename(predicate.expr, target.var, hidden))
    return out


def _negated(var: str, type_name: str) -> Operand:
    return Operand(var, type_name, NEGATED, 0, False)


def _ts(left: str, op: str, right: str) -> Expr:
    return Binary(op, Attr(left, "ts"), Attr(right, "ts"))


def rename(expr: Expr, old: str, new: str) -> Expr:
    """`expr` with variable `old` read as `new`."""
    if isinstance(expr, Attr):
        return replace(expr, var=new) if expr.var == old else expr
    if isinstance(expr, KleeneRef):
        return replace(expr, ref=rename(expr.ref, old, new))
    if isinstance(expr, Unary):
        return replace(expr, operand=rename(expr.operand, old, new))
    if isinstance(expr, Binary):
        return replace(expr, left=rename(expr.left, old, new),
                       right=rename(expr.right, old, new))
    if isinstance(expr, Call):
        return replace(expr, args=tuple(rename(a, old, new) for a in expr.args))
    return expr


def _variables(expr: Expr) -> set[str]:
    return {n.var for n in walk(expr) if isinstance(n, Attr)}
