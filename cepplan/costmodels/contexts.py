"""Costs of context-aware planning (seed 003 §5.1–§5.3): search-space sizes and the expected
cost of a pattern whose context window is pushed down."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache


@cache
def bell(n: int) -> int:
    """The Bell number B(n): the ways to group n queries for sharing (seed 003 §5.3), by the
    Bell triangle."""
    if n < 0:
        raise ValueError(f"bell({n}): n must be >= 0")
    row = [1]
    for _ in range(n):
        nxt = [row[-1]]
        for value in row:
            nxt.append(nxt[-1] + value)
        row = nxt
    return row[0]


def grouped_search_space(group_sizes: Iterable[int]) -> int:
    """Groupings searched when each context group is optimised on its own (seed 003 §5.3:
    the sum of the groups' Bell numbers instead of the Bell number of the whole workload)."""
    return sum(bell(n) for n in group_sizes)


def pushed_down_cost(cost: float, active_share: float, lookup_cost: float = 0.0) -> float:
    """Expected cost of a pattern with its context window at the bottom of its plan (seed 003
    Thm 1): the pattern's cost while active, plus a constant context lookup per event."""
    if not 0.0 <= active_share <= 1.0:
        raise ValueError(f"active share {active_share} is not in [0, 1]")
    return cost * active_share + lookup_cost
