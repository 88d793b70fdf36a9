"""Alternation (`"x:BUY|SELL"`: x binds one event of any of the types) and optional variables
(`["OPTIONAL", "x:T"]`: a match may leave x unbound), as a rewrite into core patterns: one per
choice of a type for every alternation variable and of present or absent for every optional
one, each reported under the user's pattern name, so the planner, sharing and both engines run
them unchanged.

A match binds each variable to one event or, if optional, to none; its events' types and the
variables it leaves unbound pick exactly one choice: the core patterns' matches are disjoint,
none is reported twice. They are planned as patterns of their
own, whose common parts the multi-pattern planner may share (docs/sharing.md).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

from cepplan.workload.model import Operand

MAX_CHOICES = 64  # core patterns one pattern may expand into (the product of its alternatives)


def _options(operand: Operand) -> tuple[str | None, ...]:
    """What the operand may be in a match: each of its types, and None (absent) if optional."""
    types = operand.alternatives or (operand.event_type,)
    return (*types, None) if operand.optional else types


def choice_count(operands: list[Operand]) -> int:
    """How many core patterns the operands expand into."""
    count = 1
    for operand in operands:
        count *= len(_options(operand))
    return count


def choices(name: str, operands: list[Operand]
            ) -> list[tuple[str, list[Operand], frozenset[str]]]:
    """(core pattern name, its operands, the optional variables it leaves unbound) per choice
    of a type for every alternation variable and of present or absent for every optional one,
    in the order written (present first); the operands keep the absent ones, whose predicates
    `optional.without` rewrites. Without either, just (`name`, `operands`, none)."""
    varying = [o for o in operands if len(_options(o)) > 1]
    out = []
    for picked in product(*(_options(o) for o in varying)):
        chosen = {o.var: t for o, t in zip(varying, picked, strict=True)}
        suffix = "".join(_label(o, chosen[o.var]) for o in varying)
        absent = frozenset(var for var, t in chosen.items() if t is None)
        out.append((name + suffix, [replace(o, event_type=chosen[o.var]) if chosen.get(o.var)
                                    else o for o in operands], absent))
    return out


def _label(operand: Operand, picked: str | None) -> str:
    """The core pattern name's part for one choice: `__no_x` absent, `__x_T` type T of
    alternatives, nothing for an optional variable present with its one type."""
    if picked is None:
        return f"__no_{operand.var}"
    return f"__{operand.var}_{picked}" if operand.alternatives else ""
