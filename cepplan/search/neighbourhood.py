"""Neighbourhoods N_edge and N_vertex^k over multitrees (seed 004 §4.2, §5).

A move picks patterns and a common subpattern P from the multi-pattern graph — an edge and a
subset of one of its maximal common subpatterns (N_edge), or a vertex, a subset of a
subpattern in its vicinity and up to k of the patterns containing it (N_vertex^k) — builds
P's cheapest subtree once, and gives every chosen pattern the cheapest tree containing it
(Theorem C.1). Each pattern keeps each of its other shared subtrees with probability ½ (§5).
In left-deep (MPT, §3) mode P becomes every chosen pattern's prefix instead.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from cepplan.search.graph import MultiPatternGraph, mask_of_labels, subpattern_key
from cepplan.search.local import BUSHY, Compiled, IndexTree, best_tree, mask_of
from cepplan.search.multitree import Multitree

EDGE, VERTEX = "edge", "vertex"


@dataclass
class Neighbourhood:
    """Draws random moves (pattern → new tree) around the current multitree."""

    compiled: Sequence[Compiled]
    graph: MultiPatternGraph
    members: Sequence[int]  # the connected component searched
    kind: str = EDGE
    k: int = 2
    shape: str = BUSHY
    _edges: list[tuple[int, int]] = field(default_factory=list)
    _vertices: list[int] = field(default_factory=list)
    _local: dict = field(default_factory=dict)
    _containing: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        inside = set(self.members)
        self._edges = [e for e in self.graph.edges if e[0] in inside]
        self._vertices = [v for v in self.members if self.graph.peers.get(v)]

    def move(self, state: Multitree, rng: random.Random) -> dict[int, IndexTree]:
        """One random neighbour of `state`, as the trees that change."""
        if self.kind == EDGE:
            i, j = rng.choice(self._edges)
            labels = _random_subset(rng.choice(self.graph.edges[(i, j)])[1], rng)
            group = [i, j]
        else:
            i = rng.choice(self._vertices)
            labels = _random_subset(rng.choice(self.graph.peers[i])[1], rng)
            others = [q for q in self._patterns_containing(i, labels) if q != i]
            group = [i, *rng.sample(others, min(self.k - 1, len(others)))]
        return self._share(state, group, labels, rng)

    def _share(self, state: Multitree, group: list[int], labels: frozenset[str],
               rng: random.Random) -> dict[int, IndexTree]:
        first = self.compiled[group[0]]
        sub, _ = best_tree(first, shape=self.shape, within=mask_of_labels(first, labels))
        move = {}
        for q in group:
            c = self.compiled[q]
            mine = _translate(sub, first, c)
            required = [mine]
            if self.shape == BUSHY:
                taken = mask_of(mine)
                for kept in state.shared_subtrees(q):
                    if not mask_of(kept) & taken and rng.random() < 0.5:
                        required.append(kept)
                        taken |= mask_of(kept)
            move[q] = self.local(q, required)
        return move

    def local(self, q: int, required: list[IndexTree]) -> IndexTree:
        """𝒜 with a cache: the cheapest tree of pattern q containing the required subtrees."""
        key = (q, frozenset(required))
        found = self._local.get(key)
        if found is None:
            found = self._local[key] = best_tree(self.compiled[q], required, self.shape)[0]
        return found

    def _patterns_containing(self, i: int, labels: frozenset[str]) -> list[int]:
        """Γ_P: the patterns of the component with the same subpattern over these labels."""
        key = subpattern_key(self.compiled[i], labels)
        found = self._containing.get(key)
        if found is None:
            found = [q for q in self.members if labels <= set(self.compiled[q].index)
                     and subpattern_key(self.compiled[q], labels) == key]
            self._containing[key] = found
        return found


def parse_neighbourhood(text: str) -> tuple[str, int]:
    """'edge' or 'vertex:K' (K ≥ 2) → (kind, k); ValueError otherwise."""
    if text == EDGE:
        return EDGE, 2
    kind, _, k = text.partition(":")
    if kind == VERTEX and k.isascii() and k.isdigit() and int(k) >= 2:  # not '²' or '٣'
        return VERTEX, int(k)
    raise ValueError(f"{text!r} is not 'edge' or 'vertex:K' with K ≥ 2")


def _random_subset(labels: tuple[str, ...], rng: random.Random) -> frozenset[str]:
    size = rng.randint(2, len(labels))
    return frozenset(rng.sample(labels, size))


def _translate(tree: IndexTree, source: Compiled, target: Compiled) -> IndexTree:
    """The same subtree over another pattern's variables (matched by label)."""
    if isinstance(tree, tuple):
        return (_translate(tree[0], source, target), _translate(tree[1], source, target))
    return target.index[source.labels[tree]]
