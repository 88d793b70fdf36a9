"""Brute-force enumeration of every detection plan: the independent reference for the DP."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations


def ordered_partitions(items: tuple[str, ...]) -> Iterator[tuple[frozenset[str], ...]]:
    """Every sequence of non-empty disjoint steps covering `items` (T(n) of seed 002 §3.1)."""
    if not items:
        yield ()
        return
    for size in range(1, len(items) + 1):
        for first in combinations(items, size):
            rest = tuple(i for i in items if i not in first)
            for tail in ordered_partitions(rest):
                yield (frozenset(first), *tail)
