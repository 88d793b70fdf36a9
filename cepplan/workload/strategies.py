"""Selection strategies of a SEQ pattern (`strategy`: any, next, strict), as rewrites into the
core language: hidden negated operands, which the planner, both engines and the cost models
already evaluate, so a strategy needs no engine code of its own.

Semantics (format doc, "Selection strategies"), for consecutive positive variables x, y (one
strategy for every such pair, or one per later variable y):
- `next` (FlinkCEP `followedBy`, CORE `NEXT`): no event other than the match's own, of y's
  type (any of its alternatives) and satisfying y's conditions, lies after x and strictly
  before y's timestamp. Rewrite: `["NOT", "__next_y:Y"]` between x and y carrying y's
  conditions, one per alternative type of y.
- `strict` (FlinkCEP `next`, MATCH_RECOGNIZE's default): no event of the partition other than
  the match's own has a timestamp strictly between x's and y's. Rewrite: one hidden `NOT` per
  primitive event type between x and y; a Kleene x or y is read by its last or first event.
  A Kleene variable the strategy names (or every one, for a pattern-wide `strict`) is also
  marked `consecutive`: no event of the partition lies strictly between two of its events, a
  condition the matcher's Kleene stage enumerates directly (not expressible as a negation).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

from cepplan.workload.expr.ast import Attr, Binary, Call, Expr, KleeneRef, Unary, walk
from cepplan.workload.expr.printer import to_text
from cepplan.workload.model import FILTER, JOIN, KLEENE, NEGATED, Operand, Pattern, Predicate

STRATEGIES = ("any", "next", "strict")


def pair_strategies(pattern: Pattern) -> dict[str, str]:
    """Each positive variable but the first -> the strategy between it and the positive
    variable before it: `pattern.strategy` for all, or as its object names them (else any)."""
    ordered = sorted(pattern.positive, key=lambda o: o.position)
    spec = pattern.strategy
    return {o.var: spec if isinstance(spec, str) else spec.get(o.var, "any")
            for o in ordered[1:]}


def strategy_problem(pattern: Pattern) -> tuple[str, str] | None:
    """(the place under `strategy`, why) when the pattern's strategy cannot apply, else None."""
    spec = pattern.strategy
    if not isinstance(spec, str):
        first = min(pattern.operands, key=lambda o: o.position).var
        for var in spec:
            if var not in pattern.variables:
                return var, f"{var!r} is not a variable of this pattern"
            if pattern.operand(var).kind == NEGATED:
                return var, f"{var!r} is negated: a strategy orders the events a match binds"
            if var == first or var == min(pattern.positive, key=lambda o: o.position).var:
                return var, (f"{var!r} is the first event of the match: a strategy names the "
                             "later of two consecutive variables")
    used = sorted(set(pair_strategies(pattern).values()) - {"any"})
    if spec == "strict" and not used and any(o.kind == KLEENE for o in pattern.operands):
        return "", ("strategy 'strict' with a lone KLEENE variable is not supported: its "
                    "events are back to back only between other variables of a SEQ")
    if not used:
        return None
    strategy = " and ".join(repr(s) for s in used)
    if pattern.operator != "SEQ":
        return "", (f"strategy {strategy} orders events: it applies to a SEQ pattern, not "
                    f"{pattern.operator}")
    kleene = [o for o in pattern.operands if o.kind == KLEENE]
    if kleene and "next" in used:
        return "", (f"strategy 'next' is not supported with a KLEENE operand "
                    f"({', '.join(o.var for o in kleene)}); use \"strict\" or \"any\"")
    complex_ = [o.var for o in pattern.positive if o.is_complex]
    if complex_:
        return "", (f"strategy {strategy} applies between primitive events; "
                    f"{', '.join(complex_)} binds another pattern's matches")
    return None


def apply_strategy(pattern: Pattern, event_types: dict, ties_allowed: bool) -> Pattern:
    """The core pattern equivalent to `pattern` under its strategy (module doc); `event_types`
    are the workload's primitive types, `ties_allowed` whether `seq_ties` is `allow`."""
    chosen = pair_strategies(pattern)
    if set(chosen.values()) <= {"any"} and pattern.strategy != "strict":
        return pattern
    ordered = sorted(pattern.operands, key=lambda o: o.position)
    positives = [o for o in ordered if o.kind != NEGATED]
    extra_operands: dict[str, list[Operand]] = {}
    extra_predicates: list[Expr] = []
    for before, after in pairwise(positives):
        if chosen[after.var] == "any":
            continue
        if chosen[after.var] == "next":
            extra_operands[after.var] = []
            types = after.alternatives or (after.event_type,)  # alternation: any of its types
            for index, type_name in enumerate(types):
                # users cannot bind names beginning with "__"
                hidden = f"__next_{after.var}" + (f"_{index}" if index else "")
                extra_operands[after.var].append(_negated(hidden, type_name))
                extra_predicates += _next_conditions(pattern, positives, after, hidden)
                if ties_allowed:
                    extra_predicates.append(_ts(hidden, "<", after.var))
        else:
            before_kleene, after_kleene = before.kind == KLEENE, after.kind == KLEENE
            extra_operands[after.var] = []
            for index, type_name in enumerate(sorted(event_types)):
                attributes = event_types[type_name].attributes
                if not all(k in attributes for k in pattern.partition_by):
                    continue  # no event of this type is in any partition
                hidden = f"__strict_{after.var}_{index}"
                extra_operands[after.var].append(_negated(hidden, type_name))
                if ties_allowed:
                    extra_predicates.append(_ts(hidden, ">", before.var, "LAST" * before_kleene))
                    extra_predicates.append(_ts(hidden, "<", after.var, "FIRST" * after_kleene))
    spec = pattern.strategy
    consecutive = {o.var for o in positives if o.kind == KLEENE
                   and (spec if isinstance(spec, str) else spec.get(o.var)) == "strict"}
    operands: list[Operand] = []
    for operand in ordered:
        for hidden in extra_operands.get(operand.var, ()):
            operands.append(replace(hidden, position=len(operands)))
        operands.append(replace(operand, position=len(operands),
                                consecutive=operand.var in consecutive))
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


def _ts(left: str, op: str, right: str, kleene: str = "") -> Expr:
    """`left.ts op right.ts`; `kleene` (FIRST or LAST) reads a Kleene `right` by that event."""
    other = Attr(right, "ts")
    return Binary(op, Attr(left, "ts"), KleeneRef(kleene, other) if kleene else other)


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
