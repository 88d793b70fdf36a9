"""Reading a pattern's `structure` (prefix form) into its operator and operands.

Rules (format doc, "patterns"; seed 002 §2.2): the root is `SEQ`, `AND` or `OR`; an operand is
a leaf `"var:Type"` (a plain leaf may name alternatives, `"x:BUY|SELL"`), `["NOT", leaf]`,
`["KLEENE", leaf]` or `["OPTIONAL", leaf]`. `NOT` may not stand alone or under `OR`; a
`SEQ`/`AND` keeps a non-negated operand. Nested operators inside one pattern are not supported:
the inner part is written as its own pattern and bound by name (a complex subevent), which is
also how the planner sees hierarchy (seed 002 §3.2.3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from cepplan.workload.model import KLEENE, NEGATED, PLAIN
from cepplan.workload.names import RULE, is_name

OPERATORS = ("SEQ", "AND", "OR")
_LEAF = re.compile(r"^([^:\s]+):([^:]+)$")
MAX_REPEAT = 1000  # the largest KLEENE bound written (the engines' kleene_cap applies still)
_RESERVED = {"and", "or", "not", "true", "false", "ts"}


@dataclass(frozen=True)
class RawOperand:
    """An operand as written, before its type is resolved."""

    var: str
    type_name: str
    kind: str
    path: tuple[str | int, ...]  # where it stands, relative to the structure
    alternatives: tuple[str, ...] = ()  # "x:BUY|SELL": every type it may bind (alternation)
    optional: bool = False  # ["OPTIONAL", "x:T"]: a match may leave it unbound
    min_count: int = 1  # KLEENE bounds {"min": n, "max": m} (min 0: optional, min_count 1)
    max_count: int | None = None


class StructureError(ValueError):
    """A structure rule broken at `path` (relative to the pattern's `structure`)."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()):
        super().__init__(message)
        self.message = message
        self.path = path


def read_structure(structure: object) -> tuple[str, list[RawOperand], list[StructureError]]:
    """The operator, the operands and every rule broken (all of them, not just the first)."""
    if isinstance(structure, str):
        return "", [], [StructureError(
            "the structure must be an operator list such as [\"SEQ\", \"a:A\", \"b:B\"]")]
    if not isinstance(structure, list) or not structure:
        return "", [], [StructureError("the structure must be a non-empty list")]
    head = structure[0]
    if head in ("NOT", "KLEENE", "OPTIONAL"):
        what = "NOT cannot stand alone" if head == "NOT" else f"{head} cannot be the whole pattern"
        return "", [], [StructureError(f"{what}: put it inside SEQ or AND, e.g. [\"SEQ\", "
                                       f"\"a:A\", [\"{head}\", \"b:B\"]]", (0,))]
    if head not in OPERATORS:
        return "", [], [StructureError(
            f"unknown operator {head!r}: the root must be SEQ, AND or OR", (0,))]
    if len(structure) < 2:
        return head, [], [StructureError(f"{head} needs at least one operand")]
    operands, errors = [], []
    for index, item in enumerate(structure[1:], start=1):
        try:
            operands.append(_operand(head, item, (index,)))
        except StructureError as err:
            errors.append(err)
    if head in ("SEQ", "AND") and operands and all(o.kind == NEGATED or o.optional
                                                   for o in operands):
        what = ("neither negated nor optional (OPTIONAL, or KLEENE with min 0): a match "
                "cannot be empty"
                if any(o.optional for o in operands) else "not negated")
        errors.append(StructureError(f"{head} needs at least one operand that is {what}"))
    return head, operands, errors


def _operand(operator: str, item: object, path: tuple[str | int, ...]) -> RawOperand:
    if isinstance(item, str):
        leaf = _leaf(item, PLAIN, path)
        if leaf.alternatives and operator == "OR":
            raise StructureError("alternation inside OR: write each type as its own operand, "
                                 f"e.g. [\"OR\", \"{leaf.var}1:{leaf.alternatives[0]}\", "
                                 f"\"{leaf.var}2:{leaf.alternatives[1]}\"]", path)
        return leaf
    if not isinstance(item, list) or not item:
        raise StructureError(f"an operand must be \"var:Type\" or a list, not {item!r:.40}", path)
    head = item[0]
    if head == "OPTIONAL":
        return _optional(operator, item, path)
    if head in OPERATORS:
        raise StructureError(
            f"nested {head} inside one pattern is not supported: define it as its own pattern "
            "and bind it here as \"var:PatternName\"", path)
    if head not in ("NOT", "KLEENE"):
        raise StructureError(f"unknown operator {head!r}", (*path, 0))
    bounds = item[2] if head == "KLEENE" and len(item) == 3 else None
    if len(item) != (2 if bounds is None else 3):
        raise StructureError(f"{head} takes exactly one operand" + (
            " and optionally its bounds {\"min\": n, \"max\": m}" if head == "KLEENE" else ""),
            path)
    inner = item[1]
    if head == "NOT" and operator == "OR":
        raise StructureError("NOT cannot be used inside OR", path)
    if isinstance(inner, list):
        inner_head = inner[0] if inner else None
        if head == "KLEENE" and inner_head == "NOT":
            raise StructureError(
                "KLEENE of NOT is meaningless: KLEENE needs events that occur", path)
        if head == "NOT" and inner_head == "KLEENE":
            raise StructureError("NOT of KLEENE is the same as NOT: write [\"NOT\", \"x:T\"]", path)
        raise StructureError(
            f"{head} applies to a single \"var:Type\"; for anything larger define a pattern "
            "and bind it by name", (*path, 1))
    if not isinstance(inner, str):
        raise StructureError(f"{head} needs \"var:Type\", not {inner!r:.40}", (*path, 1))
    leaf = _leaf(inner, KLEENE if head == "KLEENE" else NEGATED, (*path, 1))
    if leaf.alternatives:
        raise StructureError(f"{head} takes a single type, not the alternatives "
                             f"{' | '.join(leaf.alternatives)}", (*path, 1))
    if bounds is None:
        return leaf
    low, high = _bounds(bounds, (*path, 2))
    if low == 0 and operator == "OR":
        raise StructureError("a KLEENE with min 0 is optional: meaningless inside OR", path)
    return replace(leaf, min_count=max(1, low), max_count=high, optional=low == 0)


def _bounds(bounds: object, path: tuple[str | int, ...]) -> tuple[int, int | None]:
    """(min, max) of `{"min": n, "max": m}` (SQL's `{n,m}`, FlinkCEP's `times(n, m)`): min
    default 1, max default none; refused: {0,0}, max below min, anything but whole numbers."""
    if not isinstance(bounds, dict) or not bounds or set(bounds) - {"min", "max"}:
        raise StructureError("KLEENE bounds are an object {\"min\": n, \"max\": m} (either "
                             f"may be left out), not {bounds!r:.60}", path)
    low, high = bounds.get("min", 1), bounds.get("max")
    for key, value in (("min", low), ("max", high)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 0 <= value <= MAX_REPEAT):
            raise StructureError(f"{key} must be a whole number from 0 to {MAX_REPEAT}, not "
                                 f"{value!r:.40}", (*path, key))
    if high is not None and high < low:
        raise StructureError(f"max {high} is below min {low}", (*path, "max"))
    if high == 0:
        raise StructureError("{\"min\": 0, \"max\": 0} binds no event: drop the operand",
                             (*path, "max"))
    return low, high


def _optional(operator: str, item: list, path: tuple[str | int, ...]) -> RawOperand:
    """`["OPTIONAL", "x:T"]`: a plain leaf (alternatives allowed) a match may leave unbound."""
    if operator == "OR":
        raise StructureError("OPTIONAL inside OR is meaningless: an OR binds one operand", path)
    if len(item) != 2 or not isinstance(item[1], str):
        raise StructureError("OPTIONAL applies to a single \"var:Type\"", path)
    return replace(_leaf(item[1], PLAIN, (*path, 1)), optional=True)


def _leaf(text: str, kind: str, path: tuple[str | int, ...]) -> RawOperand:
    match = _LEAF.match(text)
    if not match:
        raise StructureError(f"a leaf must look like \"var:Type\", not {text!r:.60}", path)
    var, type_name = match.groups()  # the type is checked where it is looked up
    if not is_name(var):
        raise StructureError(f"{var!r} is not a valid variable name ({RULE})", path)
    if var.startswith("__") or var in _RESERVED:
        raise StructureError(f"{var!r} cannot be used as a variable name", path)
    if "|" not in type_name:
        return RawOperand(var, type_name, kind, path)
    alternatives = tuple(t.strip() for t in type_name.split("|"))
    if len(set(alternatives)) < len(alternatives) or not all(alternatives):
        raise StructureError(f"the alternatives of {var!r} must be distinct type names "
                             f"separated by '|', not {type_name!r:.60}", path)
    return RawOperand(var, alternatives[0], kind, path, alternatives)
