"""Print expression trees back to predicate text that parses to the same tree."""

from __future__ import annotations

from cepplan.workload.expr.ast import Attr, Binary, Call, Expr, KleeneRef, Literal, Unary

_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
               "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
_UNARY_MINUS = 7


def to_text(expr: Expr) -> str:
    """Canonical text of a tree; `parse(to_text(t)) == t` for every well-formed tree."""
    if isinstance(expr, Literal):
        return _literal(expr)
    if isinstance(expr, Attr):
        return f"{expr.var}.{expr.attr}"
    if isinstance(expr, KleeneRef):
        return f"{expr.func}({to_text(expr.ref)})"
    if isinstance(expr, Call):
        return f"{expr.func}({', '.join(to_text(a) for a in expr.args)})"
    if isinstance(expr, Unary):
        if expr.op == "not":
            return f"not {_wrap(expr.operand, _PRECEDENCE['not'], strict=False)}"
        return f"-{_wrap(expr.operand, _UNARY_MINUS, strict=False)}"
    prec = _PRECEDENCE[expr.op]
    # Operators are left-associative; comparisons do not chain, so both sides must bind tighter.
    left_strict = expr.op in ("<", "<=", ">", ">=", "==", "!=")
    left = _wrap(expr.left, prec, strict=left_strict)
    right = _wrap(expr.right, prec, strict=True)
    return f"{left} {expr.op} {right}"


def _wrap(expr: Expr, parent: int, *, strict: bool) -> str:
    text = to_text(expr)
    own = _own_precedence(expr)
    if own < parent or (strict and own == parent):
        return f"({text})"
    return text


def _own_precedence(expr: Expr) -> int:
    if isinstance(expr, Binary):
        return _PRECEDENCE[expr.op]
    if isinstance(expr, Unary):
        return _PRECEDENCE["not"] if expr.op == "not" else _UNARY_MINUS
    if isinstance(expr, Literal) and isinstance(expr.value, (int, float)) and expr.value < 0:
        return 0  # a negative constant prints with a sign: keep it parenthesised
    return 99


def _literal(lit: Literal) -> str:
    if lit.type == "bool":
        return "true" if lit.value else "false"
    if lit.type == "string":
        escaped = str(lit.value).replace("\\", "\\\\").replace("'", "\\'")
        return f"'{escaped}'"
    if lit.type == "double":
        return repr(float(lit.value))
    return str(int(lit.value))
