"""The plans the search is measured against (seed 004 §6.2): trivial (each pattern in its own
order, nothing shared), RE (each pattern's cheapest tree, nothing shared) and SH (maximal
sharing of common subpatterns, orders fixed: shared part first, the rest in pattern order).

Unshared plans cost Σ Cost_tree of the patterns' trees — every pattern evaluated on its own,
as the engine does without sharing; shared plans cost Cost_tree^multi (App. C).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import partial

from cepplan.costmodels.trees import shared_node_cost
from cepplan.search.graph import MultiPatternGraph, mask_of_labels
from cepplan.search.local import Compiled, IndexTree, best_tree, local_cost, pattern_order_tree
from cepplan.search.multitree import multi_cost


def trivial_trees(compiled: Sequence[Compiled]) -> list[IndexTree]:
    return [pattern_order_tree(c.m) for c in compiled]


def reordered_trees(compiled: Sequence[Compiled], shape: str) -> list[IndexTree]:
    """RE: every pattern's cheapest local plan (seed 004 §4.2's starting point)."""
    return [best_tree(c, shape=shape)[0] for c in compiled]


def greedy_trees(compiled: Sequence[Compiled]) -> list[IndexTree]:
    """RE as seed 004 §6.2 defines it (from its [40]): a left-deep order built greedily, each
    step appending the event that makes the next partial matches fewest."""
    trees: list[IndexTree] = []
    for c in compiled:
        chosen, tree = 0, None
        for _ in range(c.m):
            step = min((i for i in range(c.m) if not chosen >> i & 1),
                       key=lambda i, chosen=chosen: c.cost[chosen | 1 << i])
            tree = step if tree is None else (tree, step)
            chosen |= 1 << step
        trees.append(tree)
    return trees


def cost_floor(compiled: Sequence[Compiled]) -> tuple[float, float, float]:
    """What no multitree goes below (seed 004 App. C), as (complete matches, negation,
    leaves): every distinct root once (patterns equal over labels share theirs) with the
    widest window of its patterns, every negation node, and each event type's leaf once."""
    roots: dict[int, list] = {}
    leaves: dict[str, list] = {}
    for c in compiled:
        full = (1 << c.m) - 1
        roots.setdefault(c.signature(full), []).append((c.window, partial(c.cost_at, full)))
        for i, label in enumerate(c.labels):
            leaves.setdefault(label, []).append((c.window, partial(c.cost_at, 1 << i)))
    negation = sum(c.pattern.negation_cost for c in compiled)
    return (sum(map(shared_node_cost, roots.values())), negation,
            sum(map(shared_node_cost, leaves.values())))


def sharing_floor(compiled: Sequence[Compiled]) -> float:
    """A floor under every multitree that also counts inner nodes (seed 004 App. C): each
    node's cost split among the most patterns that could use it — those holding a subpattern
    of its signature (§4.1; leaves: of its event type, §5) — and each pattern's cheapest tree
    under those split costs (subset DP), plus negation. A node used by u patterns costs at
    least each user's own-window C(N) (§3.1: the largest window), and u ≤ its holders.
    O(3^m) per pattern of m events: meant for benchmarks and tests, not for planning."""
    holders: Counter = Counter()
    for c in compiled:
        for mask in range(1, 1 << c.m):
            holders[_holder_key(c, mask)] += 1
    total = sum(c.pattern.negation_cost for c in compiled)
    for c in compiled:
        full = (1 << c.m) - 1
        best = [0.0] * (full + 1)
        for mask in range(1, full + 1):
            here = c.cost[mask] / holders[_holder_key(c, mask)]
            if mask & (mask - 1):
                split, left = math.inf, (mask - 1) & mask
                while left:
                    if left < mask ^ left:  # each unordered split once
                        split = min(split, best[left] + best[mask ^ left])
                    left = (left - 1) & mask
                here += split
            best[mask] = here
        total += best[full]
    return total


def _holder_key(c: Compiled, mask: int) -> tuple:
    if mask & (mask - 1):
        return (c.group, c.signature(mask))
    return (c.group, "leaf", c.labels[mask.bit_length() - 1])


def unshared_cost(compiled: Sequence[Compiled], trees: Sequence[IndexTree]) -> float:
    """Σ_i Cost_tree(T_i) + the negation nodes: no node shared."""
    return sum(local_cost(c, t) + c.pattern.negation_cost
               for c, t in zip(compiled, trees, strict=True))


def shared_trees(compiled: Sequence[Compiled], graph: MultiPatternGraph) -> list[IndexTree]:
    """SH: the largest common subpatterns first (then the most widely shared), each pattern
    taking the first one it owns, evaluated left-deep in one canonical order."""
    chosen: dict[int, tuple[str, ...]] = {}
    ranked = sorted(graph.owners.items(), key=lambda kv: (-len(kv[0][1]), -len(kv[1]), kv[0][1]))
    for (_, labels, _), owners in ranked:
        for p in sorted(owners):
            chosen.setdefault(p, labels)
    trees = []
    for p, c in enumerate(compiled):
        labels = chosen.get(p, ())
        shared = [c.index[label] for label in labels]  # SEQ position / sorted-label order
        rest = [i for i in range(c.m) if not mask_of_labels(c, labels) >> i & 1]
        order = shared + rest
        tree: IndexTree = order[0]
        for i in order[1:]:
            tree = (tree, i)
        trees.append(tree)
    return trees


def sh_cost(compiled: Sequence[Compiled], graph: MultiPatternGraph) -> float:
    return multi_cost(compiled, shared_trees(compiled, graph))
