"""The report's sharing table: each subtree the evaluation search computes once, written in the
workload's own terms (`SEQ(a:GOOG, b:MSFT) where a.diff < b.diff`), with the patterns using it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cepplan.workload.model import Pattern, Workload


def shared_nodes(workload: Workload, sharing: Mapping[str, Any]) -> dict[str, Any]:
    """The report's `sharing`: per shared node an id, the subtree as the first user writes it,
    its evaluation tree, window, modelled cost and every user (with its own variables); and
    the patterns that use any shared node, in workload order."""
    nodes = []
    for number, node in enumerate(sharing["shared"], start=1):
        users = node["users"]
        first, tree = next(iter(users.items()))
        nodes.append({"id": f"S{number}", "subtree": subtree_text(workload.pattern(first), tree),
                      "tree": tree_text(tree), "size": node["size"], "window": node["window"],
                      "cost": node["cost"], "patterns": list(users), "users": dict(users)})
    using = {p for n in nodes for p in n["patterns"]}
    return {"unit": sharing["cost_unit"], "search": sharing["search"]["algorithm"],
            "nodes": nodes, "patterns": [p.name for p in workload.patterns if p.name in using]}


def subtree_text(pattern: Pattern, tree: Any) -> str:
    """The pattern's operator over the subtree's variables (with their event types, in the
    pattern's order) and the conditions among them, as the workload writes them."""
    variables = set(leaves(tree))
    operands = [o for o in pattern.operands if o.var in variables]
    where = [p.text for p in pattern.predicates if p.variables <= variables]
    text = f"{pattern.operator}({', '.join(f'{o.var}:{o.event_type}' for o in operands)})"
    return f"{text} where {' and '.join(where)}" if where else text


def tree_text(tree: Any) -> str:
    """The evaluation tree as nested joins: `(a ⋈ b) ⋈ c`."""
    if isinstance(tree, list | tuple):
        left, right = (tree_text(t) for t in tree)
        wrap = [f"({side})" if isinstance(t, list | tuple) else side
                for side, t in zip((left, right), tree, strict=True)]
        return " ⋈ ".join(wrap)
    return str(tree)


def leaves(tree: Any) -> list[str]:
    """The variables of a (nested list) tree, left to right."""
    if isinstance(tree, list | tuple):
        return [v for t in tree for v in leaves(t)]
    return [str(tree)]
