"""Type checking of expression trees against the types of a pattern's variables.

Types are the schema types `double`, `long`, `string`, `bool`. Numbers mix freely; `/` and `%`
give `double`; comparisons need two numbers or two values of the same type (strings order
lexicographically, booleans compare with `==`/`!=` only). `var.ts` is every event's timestamp, a
`double` in the workload's `time_unit`. A predicate must be `bool`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cepplan.workload.expr.ast import Attr, Binary, Call, Expr, KleeneRef, Literal, Unary
from cepplan.workload.expr.errors import ExprError

NUMERIC = ("double", "long")


@dataclass(frozen=True)
class VarInfo:
    """What the type checker knows of a variable: its event type, attributes and binding kind."""

    event_type: str
    attributes: Mapping[str, str]
    kleene: bool = False
    negated: bool = False


def check_predicate(expr: Expr, variables: Mapping[str, VarInfo]) -> None:
    """Raise `ExprError` unless `expr` is a well-typed boolean over the given variables."""
    result = type_of(expr, variables)
    if result != "bool":
        raise ExprError(f"a predicate must be true or false, but this is a {result}", expr.pos)


def type_of(expr: Expr, variables: Mapping[str, VarInfo]) -> str:
    """The type of an expression, or `ExprError` at the first ill-typed node."""
    if isinstance(expr, Literal):
        return expr.type
    if isinstance(expr, Attr):
        return _attr_type(expr, variables)
    if isinstance(expr, KleeneRef):
        info = variables.get(expr.ref.var)
        if info is not None and not info.kleene:
            raise ExprError(
                f"{expr.func}() needs a KLEENE variable; '{expr.ref.var}' binds a single event",
                expr.pos,
            )
        return _attr_type(expr.ref, variables)
    if isinstance(expr, Unary):
        inner = type_of(expr.operand, variables)
        if expr.op == "not":
            _need(inner == "bool", "'not' needs true/false", inner, expr)
            return "bool"
        _need(inner in NUMERIC, "'-' needs a number", inner, expr)
        return inner
    if isinstance(expr, Call):
        return _call_type(expr, variables)
    return _binary_type(expr, variables)


def _attr_type(ref: Attr, variables: Mapping[str, VarInfo]) -> str:
    info = variables.get(ref.var)
    if info is None:
        known = ", ".join(sorted(variables)) or "none"
        raise ExprError(f"unknown variable '{ref.var}' (this pattern binds: {known})", ref.pos)
    if ref.attr == "ts":
        return "double"
    attr_type = info.attributes.get(ref.attr)
    if attr_type is None:
        known = ", ".join(sorted(info.attributes)) or "none"
        raise ExprError(
            f"'{ref.var}' is a {info.event_type}, which has no attribute '{ref.attr}'"
            f" (attributes: {known}, ts)",
            ref.pos,
        )
    return attr_type


def _call_type(call: Call, variables: Mapping[str, VarInfo]) -> str:
    arg_types = [type_of(a, variables) for a in call.args]
    arity = {"abs": (1, 1), "distance": (4, 4), "min": (2, 64), "max": (2, 64)}[call.func]
    if not arity[0] <= len(arg_types) <= arity[1]:
        want = str(arity[0]) if arity[0] == arity[1] else f"at least {arity[0]}"
        raise ExprError(f"{call.func}() takes {want} arguments, got {len(arg_types)}", call.pos)
    for arg, arg_type in zip(call.args, arg_types, strict=True):
        _need(arg_type in NUMERIC, f"{call.func}() needs numbers", arg_type, arg)
    if call.func == "distance":
        return "double"
    return "double" if "double" in arg_types else "long"


def _binary_type(expr: Binary, variables: Mapping[str, VarInfo]) -> str:
    left = type_of(expr.left, variables)
    right = type_of(expr.right, variables)
    op = expr.op
    if op in ("and", "or"):
        _need(left == "bool", f"'{op}' needs true/false", left, expr.left)
        _need(right == "bool", f"'{op}' needs true/false", right, expr.right)
        return "bool"
    if op in ("+", "-", "*", "/", "%"):
        _need(left in NUMERIC, f"'{op}' needs numbers", left, expr.left)
        _need(right in NUMERIC, f"'{op}' needs numbers", right, expr.right)
        if op in ("/", "%") or "double" in (left, right):
            return "double"
        return "long"
    comparable = (left in NUMERIC and right in NUMERIC) or left == right
    if not comparable:
        raise ExprError(f"cannot compare a {left} with a {right} using '{op}'", expr.pos)
    if left == "bool" and op not in ("==", "!="):
        raise ExprError(f"true/false values compare only with == and !=, not '{op}'", expr.pos)
    return "bool"


def _need(ok: bool, message: str, found: str, node: Expr) -> None:
    if not ok:
        raise ExprError(f"{message}, found a {found}", node.pos)
