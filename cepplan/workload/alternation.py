"""Alternation inside a pattern (`"x:BUY|SELL"`: x binds one event of any of the types), as a
rewrite into core patterns: one per choice of a type for every such variable, each reported
under the user's pattern name, so the planner, sharing and both engines run them unchanged.

A match binds each variable to one event, whose type picks exactly one choice: the core
patterns' matches are disjoint, none is reported twice. They are planned as patterns of their
own, whose common parts the multi-pattern planner may share (docs/sharing.md).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

from cepplan.workload.model import Operand

MAX_CHOICES = 64  # core patterns one pattern may expand into (the product of its alternatives)


def choice_count(operands: list[Operand]) -> int:
    """How many core patterns the operands expand into."""
    count = 1
    for operand in operands:
        count *= max(1, len(operand.alternatives))
    return count


def choices(name: str, operands: list[Operand]) -> list[tuple[str, list[Operand]]]:
    """(core pattern name, its operands) per choice of a type for every alternation variable,
    in the order the types are written; without alternation, just (`name`, `operands`)."""
    alternating = [o for o in operands if o.alternatives]
    if not alternating:
        return [(name, operands)]
    out = []
    for picked in product(*(o.alternatives for o in alternating)):
        chosen = {o.var: t for o, t in zip(alternating, picked, strict=True)}
        suffix = "".join(f"__{var}_{t}" for var, t in chosen.items())
        out.append((name + suffix, [replace(o, event_type=chosen[o.var]) if o.var in chosen
                                    else o for o in operands]))
    return out
