"""The local plan generator 𝒜 (seed 004 §4.2, §5): a pattern's cheapest left-deep order or
bushy tree under Cost_tree, optionally containing given subtrees, by DP over subsets.

Trees are over variable indices: a leaf is an int, an inner node a pair (left, right). Given
required subtrees (disjoint), each becomes one atom and the DP runs over sets of atoms, so the
result contains every one of them unchanged (§5 requirement (2)); the left-deep variant takes
at most one, as the prefix (§4.2 requirement (2)). Bushy: O(3^a), left-deep: O(a·2^a) for a
atoms (ZStream-style subset DP).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from cepplan.costmodels.trees import node_cost
from cepplan.search.problem import SearchPattern

IndexTree = object  # int (leaf) or (IndexTree, IndexTree)
BUSHY, LEFT_DEEP = "bushy", "left-deep"


@dataclass
class Interner:
    """Workload-wide small-int identities for node signatures (subtree hashing, seed 004 §5)."""

    ids: dict[object, int] = field(default_factory=dict)

    def __call__(self, key: object) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.ids)
        return found


class Compiled:
    """One pattern prepared for the DP: C(mask)/W^k per variable subset and node identities."""

    def __init__(self, pattern: SearchPattern, interner: Interner, group: int = 0):
        self.pattern = pattern
        self.interner = interner
        self.group = group  # patterns of different groups never run together: nothing merges
        self.m = len(pattern.variables)
        self.window = pattern.window
        self.labels = [pattern.labels[v] for v in pattern.variables]
        self.index = {label: i for i, label in enumerate(self.labels)}
        self._masks = [(sum(1 << pattern.variables.index(v) for v in c.variables),
                        c.key, c.selectivity) for c in pattern.conditions]
        self._signatures: dict[int, int] = {}
        self._node_ids: dict[IndexTree, int] = {}
        self._costs_at: dict[tuple[int, float], float] = {}

    @cached_property
    def condition_scopes(self) -> tuple[tuple[str, frozenset[str]], ...]:
        """Each join condition's label-rewritten key and the labels it reads."""
        return tuple((c.key, frozenset(self.pattern.labels[v] for v in c.variables))
                     for c in self.pattern.conditions)

    @cached_property
    def base(self) -> list[float]:
        """C(mask)/W^|mask| for every subset (seed 004 App. C; docs/sharing.md), times κ for
        a partitioned pattern (its partial matches within keys)."""
        rates = [self.pattern.rates[v] for v in self.pattern.variables]
        out = [1.0] * (1 << self.m)
        for mask in range(1, 1 << self.m):
            low = mask & -mask
            out[mask] = out[mask ^ low] * rates[low.bit_length() - 1]
        factors = self.pattern.cooccurrence
        for mask in range(1, 1 << self.m):
            for scope, _, sel in self._masks:
                if scope & mask == scope:
                    out[mask] *= sel
            if factors:
                out[mask] *= factors.get(frozenset(
                    v for i, v in enumerate(self.pattern.variables) if mask >> i & 1), 1.0)
            if self.pattern.seq:
                out[mask] /= math.factorial(mask.bit_count())
        return out

    @cached_property
    def cost(self) -> list[float]:
        """C(mask) with the pattern's own window."""
        return [b * self.window ** mask.bit_count() for mask, b in enumerate(self.base)]

    @cached_property
    def _kleene_mask(self) -> int:
        return sum(1 << i for i, v in enumerate(self.pattern.variables)
                   if v in self.pattern.kleene)

    def cost_at(self, mask: int, window: float) -> float:
        """C(mask) within another window (a shared node's widest): a Kleene variable's
        effective rate is taken at that window, not at the pattern's own."""
        if window == self.window:
            return self.cost[mask]
        if not mask & self._kleene_mask:
            return self.base[mask] * window ** mask.bit_count()
        found = self._costs_at.get((mask, window))
        if found is None:
            names = [v for i, v in enumerate(self.pattern.variables) if mask >> i & 1]
            found = self._costs_at[(mask, window)] = node_cost(
                names, window, self.pattern.rates_at(window), self.pattern.selectivities,
                self.pattern.seq, self.pattern.cooccurrence)
        return found

    def signature(self, mask: int) -> int:
        """What a node over `mask` computes, whatever its shape: structure projection and the
        conditions inside it, over labels (seed 004 §4.1)."""
        found = self._signatures.get(mask)
        if found is None:
            members = [self.labels[i] for i in range(self.m) if mask >> i & 1]
            structure = tuple(members) if self.pattern.seq else tuple(sorted(members))
            conditions = frozenset(key for scope, key, _ in self._masks if scope & mask == scope)
            found = self._signatures[mask] = self.interner((self.pattern.operator, structure,
                                                            conditions))
        return found

    def node_id(self, tree: IndexTree) -> int:
        """The identity of a subtree: equal for identical subtrees of any two patterns."""
        found = self._node_ids.get(tree)
        if found is None:
            if isinstance(tree, int):
                found = self.interner(("leaf", self.labels[tree], self.group))
            else:
                kids = sorted((self.node_id(tree[0]), self.node_id(tree[1])))
                found = self.interner((self.signature(mask_of(tree)), *kids))
            self._node_ids[tree] = found
        return found


def mask_of(tree: IndexTree) -> int:
    if isinstance(tree, tuple):
        return mask_of(tree[0]) | mask_of(tree[1])
    return 1 << tree


def nodes_of(tree: IndexTree) -> list[IndexTree]:
    """Every node, children first."""
    if isinstance(tree, tuple):
        return [*nodes_of(tree[0]), *nodes_of(tree[1]), tree]
    return [tree]


def local_cost(compiled: Compiled, tree: IndexTree) -> float:
    """Cost_tree of one pattern's tree with its own window (seed 004 App. C)."""
    return sum(compiled.cost[mask_of(node)] for node in nodes_of(tree))


def pattern_order_tree(m: int) -> IndexTree:
    """The left-deep tree in the pattern's own order: the trivial plan."""
    tree: IndexTree = 0
    for i in range(1, m):
        tree = (tree, i)
    return tree


def best_tree(compiled: Compiled, required: Sequence[IndexTree] = (),
              shape: str = BUSHY, within: int | None = None) -> tuple[IndexTree, float]:
    """The cheapest tree (bushy) or order (left-deep) of the pattern — or of its variables in
    the mask `within` — containing every required subtree, and its Cost_tree."""
    within = (1 << compiled.m) - 1 if within is None else within
    covered = 0
    atoms: list[tuple[int, IndexTree, float]] = []
    for sub in required:
        mask = mask_of(sub)
        atoms.append((mask, sub, local_cost(compiled, sub)))
        covered |= mask
    atoms += [(1 << i, i, compiled.cost[1 << i]) for i in range(compiled.m)
              if within >> i & 1 and not covered >> i & 1]
    if shape == LEFT_DEEP:
        return _left_deep(compiled, atoms, bool(required))
    return _bushy(compiled, atoms)


def _bushy(compiled: Compiled, atoms: list[tuple[int, IndexTree, float]]
           ) -> tuple[IndexTree, float]:
    n = len(atoms)
    full = (1 << n) - 1
    var_mask = [0] * (full + 1)
    best: list[float] = [math.inf] * (full + 1)
    tree: list[IndexTree] = [None] * (full + 1)
    for a, (_, sub, cost) in enumerate(atoms):
        best[1 << a], tree[1 << a] = cost, sub
    for subset in range(1, full + 1):
        low = subset & -subset
        var_mask[subset] = var_mask[subset ^ low] | atoms[low.bit_length() - 1][0]
        if subset == low:
            continue
        here, choice = math.inf, None
        left = (subset - 1) & subset
        while left:
            right = subset ^ left
            if left < right:  # each unordered split once
                total = best[left] + best[right]
                if total < here:
                    here, choice = total, (tree[left], tree[right])
            left = (left - 1) & subset
        best[subset] = here + compiled.cost[var_mask[subset]]
        tree[subset] = choice
    return tree[full], best[full]


def _left_deep(compiled: Compiled, atoms: list[tuple[int, IndexTree, float]],
               prefixed: bool) -> tuple[IndexTree, float]:
    n = len(atoms)
    full = (1 << n) - 1
    var_mask = [0] * (full + 1)
    best: list[float] = [math.inf] * (full + 1)
    tree: list[IndexTree] = [None] * (full + 1)
    for a, (_, sub, cost) in enumerate(atoms):
        if not prefixed or a == 0:  # the required prefix is the first atom
            best[1 << a], tree[1 << a] = cost, sub
    for subset in range(1, full + 1):
        low = subset & -subset
        var_mask[subset] = var_mask[subset ^ low] | atoms[low.bit_length() - 1][0]
        if subset == low:
            continue
        here, choice = math.inf, None
        for a in range(n):
            bit = 1 << a
            if subset & bit and best[subset ^ bit] < math.inf:
                total = best[subset ^ bit] + atoms[a][2]
                if total < here:
                    here, choice = total, (tree[subset ^ bit], atoms[a][1])
        best[subset] = here + compiled.cost[var_mask[subset]]
        tree[subset] = choice
    return tree[full], best[full]
