"""The multi-pattern graph (seed 004 §4.1, App. A): the maximal common subpatterns of every
pair of patterns, kept in two hash tables, and its connected components.

`owners[key]` holds the patterns sharing a maximal common subpattern (App. A's first table,
keyed by the subpattern); `peers[i]` the subpatterns pattern i shares (the second). A key is
(operator, labels in structure order, conditions): equal conditions written over different
variable names compare equal because conditions are label-rewritten (problem.py).

Building: an inverted index label → patterns finds the pairs with two or more labels in
common (only those can share a join node; single events are shared leaves anyway); per pair,
the common labels are reduced by every conflict — two events in opposite SEQ order, a
condition present in one pattern's projection and not the other's — branching on which
event to drop, keeping the maximal results (App. A). O(n²(s+c)) worst case. Labels are bits
of one int per pattern, and a pair's result depends only on the two patterns' projections
onto their common labels, so pairs with the same two projections are reduced once (1,000
random patterns: 137,000 pairs compared, 29,000 reduced).
"""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import networkx as nx

from cepplan.search.local import Compiled

Subpattern = tuple[str, tuple[str, ...], frozenset[str]]  # operator, labels, conditions


@dataclass
class MultiPatternGraph:
    """Vertices are pattern indices; edges are pairs with a common subpattern of size ≥ 2."""

    owners: dict[Subpattern, set[int]] = field(default_factory=dict)
    peers: dict[int, list[Subpattern]] = field(default_factory=lambda: defaultdict(list))
    edges: dict[tuple[int, int], tuple[Subpattern, ...]] = field(default_factory=dict)
    complete: bool = True  # False: building stopped at its deadline, pairs left uncompared

    def components(self, n: int) -> list[list[int]]:
        """Connected components; each can be searched on its own (seed 004 §4.1)."""
        graph = nx.Graph()
        graph.add_nodes_from(range(n))
        graph.add_edges_from(self.edges)
        return [sorted(c) for c in nx.connected_components(graph)]


def build_graph(patterns: Sequence[Compiled],
                may_share: Callable[[int, int], bool] | None = None,
                deadline: float = math.inf) -> MultiPatternGraph:
    """The MPG of a workload (seed 004 §4.1, App. A); with `may_share`, only pairs of
    patterns it admits are compared (those that can run at the same time, seed 003 §5.3).
    Past `deadline` (`time.perf_counter()` time) the patterns not yet compared keep only
    the edges found so far (`complete` is then False)."""
    graph = MultiPatternGraph()
    bits: dict[str, int] = {}
    shapes = [_Shape(p, bits) for p in patterns]
    # a pair's result depends only on its two projections onto the common labels: pairs
    # with the same two projections (most pairs, in large workloads) are reduced once
    ids: dict[Subpattern, int] = {}
    reduced: dict[tuple[int, int], tuple[tuple[Subpattern, ...], tuple[int, ...]]] = {}
    owners: dict[int, set[int]] = defaultdict(set)
    by_label: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(patterns):
        for label in p.labels:
            by_label[(p.pattern.operator, label)].append(i)
    for i, (p, a) in enumerate(zip(patterns, shapes, strict=True)):
        if time.perf_counter() > deadline:
            graph.complete = False
            break
        later = [by_label[(p.pattern.operator, label)] for label in p.labels]
        common = Counter(chain.from_iterable(js[bisect_right(js, i):] for js in later))
        for j, count in common.items():
            if count < 2 or (may_share is not None and not may_share(i, j)):
                continue
            b = shapes[j]
            both = a.mask & b.mask
            pair = (a.projection(both, ids), b.projection(both, ids))
            found = reduced.get(pair)
            if found is None:
                masks = _maximal_masks(a, b)
                found = reduced[pair] = (tuple(a.key(m) for m in masks),
                                         tuple(a.projection(m, ids) for m in masks))
            if found[0]:
                graph.edges[(i, j)] = found[0]
                for key in found[1]:
                    owners[key].update((i, j))
    keys = list(ids)
    for key, users in owners.items():
        graph.owners[keys[key]] = users
        for k in sorted(users):
            graph.peers[k].append(keys[key])
    return graph


def maximal_common(a: Compiled, b: Compiled) -> list[Subpattern]:
    """The maximal common subpatterns of two patterns of the same operator, of size ≥ 2."""
    bits: dict[str, int] = {}
    first = _Shape(a, bits)
    return [first.key(mask) for mask in _maximal_masks(first, _Shape(b, bits))]


class _Shape:
    """A pattern over workload-wide label bits, for comparing it with many others fast: its
    labels as one int, the labels before each label (SEQ order) and its conditions' scopes."""

    def __init__(self, p: Compiled, bits: dict[str, int]):
        self.compiled = p
        self.bit = [1 << bits.setdefault(label, len(bits)) for label in p.labels]
        self.mask = sum(self.bit)
        self.before: dict[int, int] = {}
        seen = 0
        for bit in self.bit:
            self.before[bit] = seen if p.pattern.seq else 0
            seen |= bit
        self.conditions = [(key, sum(1 << bits.setdefault(label, len(bits)) for label in scope))
                           for key, scope in p.condition_scopes]
        self._keys: dict[int, Subpattern] = {}
        self._ids: dict[int, int] = {}

    def inside(self, common: int) -> dict[str, int]:
        """The conditions whose variables all lie in `common`, by key."""
        return {key: scope for key, scope in self.conditions if scope & common == scope}

    def projection(self, common: int, ids: dict[Subpattern, int]) -> int:
        """A workload-wide number for `key(common)`, numbered in `ids`."""
        found = self._ids.get(common)
        if found is None:
            found = self._ids[common] = ids.setdefault(self.key(common), len(ids))
        return found

    def key(self, common: int) -> Subpattern:
        """The hash key of the subpattern over the labels in `common` (seed 004 §4.1)."""
        found = self._keys.get(common)
        if found is None:
            p = self.compiled
            structure = tuple(label for label, bit in zip(p.labels, self.bit, strict=True)
                              if bit & common)
            if not p.pattern.seq:
                structure = tuple(sorted(structure))
            found = self._keys[common] = (p.pattern.operator, structure,
                                          frozenset(self.inside(common)))
        return found


def _maximal_masks(a: _Shape, b: _Shape) -> list[int]:
    """The label sets (as bits) of the maximal common subpatterns of size ≥ 2: the common
    labels reduced by every conflict — two events in opposite SEQ order, a condition present
    in one projection and not the other — branching on which event to drop (App. A)."""
    common = a.mask & b.mask
    conflicts = [scope for _, scope in a.inside(common).items() ^ b.inside(common).items()]
    for bit in a.bit:
        if bit & common:
            swapped = a.before[bit] & common & ~b.before[bit]
            while swapped:
                low = swapped & -swapped
                conflicts.append(bit | low)
                swapped ^= low
    results: list[int] = []
    for subset in _maximal(common, conflicts):
        if subset.bit_count() >= 2 and not any(subset & other == subset for other in results):
            results = [r for r in results if r & subset != r] + [subset]
    return results


def subpattern_key(p: Compiled, labels: frozenset[str]) -> Subpattern:
    """The hash key of pattern p's subpattern over `labels` (its projection, seed 004 §4.1)."""
    mask = mask_of_labels(p, labels)
    structure = tuple(p.labels[i] for i in range(p.m) if mask >> i & 1)
    if not p.pattern.seq:
        structure = tuple(sorted(structure))
    conditions = frozenset(key for key, scope in p.condition_scopes if scope <= labels)
    return p.pattern.operator, structure, conditions


def mask_of_labels(p: Compiled, labels: frozenset[str] | tuple[str, ...]) -> int:
    return sum(1 << p.index[label] for label in labels)


def _maximal(labels: int, conflicts: list[int]) -> list[int]:
    """Maximal subsets of `labels` containing no conflict whole, by branching on which label
    of the first violated conflict to drop."""
    violated = next((c for c in conflicts if c & labels == c), None)
    if violated is None:
        return [labels]
    out: list[int] = []
    while violated:
        low = violated & -violated
        violated ^= low
        for found in _maximal(labels & ~low, conflicts):
            if found not in out:
                out.append(found)
    return out
