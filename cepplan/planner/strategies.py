"""Choosing k of a node's Pareto-optimal plans to propagate to its parents (seed 002 §3.2.1,
strategies compared in §6.3): random, minimum latency, minimum cost, balanced, mixture.

"Balanced" ranks plans by the length of their projection on the cost = latency line after
scaling cost and latency to [0, 1] over the front (they have different units); "mixture"
takes k/3 by each of minimum latency, minimum cost and balanced, then fills up by balanced.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from cepplan.planner.candidates import Candidate

STRATEGIES = ("mixture", "random", "min-latency", "min-cost", "balanced")


def limit(front: Sequence[Candidate], k: int | None, strategy: str = "mixture",
          seed: int = 0) -> list[Candidate]:
    """At most k plans of `front` (all of them when k is None or the front is small),
    returned by increasing latency."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if k is None or len(front) <= k:
        return list(front)
    if strategy == "random":
        picked = random.Random(seed).sample(list(front), k)
    elif strategy == "mixture":
        picked = []
        for rank in (_by_latency, _by_cost, _balanced(front)):
            for cand in sorted(front, key=rank)[: max(1, k // 3)]:
                if cand not in picked and len(picked) < k:
                    picked.append(cand)
        for cand in sorted(front, key=_balanced(front)):
            if len(picked) >= k:
                break
            if cand not in picked:
                picked.append(cand)
    else:
        rank = {"min-latency": _by_latency, "min-cost": _by_cost,
                "balanced": _balanced(front)}[strategy]
        picked = sorted(front, key=rank)[:k]
    return sorted(picked, key=lambda c: (c.latency, c.cost))


def _by_latency(cand: Candidate) -> tuple:
    return (cand.latency, cand.cost)


def _by_cost(cand: Candidate) -> tuple:
    return (cand.cost, cand.latency)


def _balanced(front: Sequence[Candidate]) -> Callable[[Candidate], tuple]:
    costs = [c.cost for c in front]
    lats = [c.latency for c in front]
    c_lo, c_span = min(costs), (max(costs) - min(costs)) or 1.0
    l_lo, l_span = min(lats), (max(lats) - min(lats)) or 1

    def rank(cand: Candidate) -> tuple:
        return ((cand.cost - c_lo) / c_span + (cand.latency - l_lo) / l_span, cand.latency)

    return rank
