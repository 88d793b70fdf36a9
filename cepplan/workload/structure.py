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
        what = ("neither negated nor optional: a match cannot be empty"
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
    if len(item) != 2:
        raise StructureError(f"{head} takes exactly one operand", path)
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
    return leaf


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
