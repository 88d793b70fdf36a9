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
event to drop, keeping the maximal results (App. A). O(n²(s+c)) worst case.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import networkx as nx

from cepplan.search.local import Compiled

Subpattern = tuple[str, tuple[str, ...], frozenset[str]]  # operator, labels, conditions


@dataclass
class MultiPatternGraph:
    """Vertices are pattern indices; edges are pairs with a common subpattern of size ≥ 2."""

    owners: dict[Subpattern, set[int]] = field(default_factory=dict)
    peers: dict[int, list[Subpattern]] = field(default_factory=lambda: defaultdict(list))
    edges: dict[tuple[int, int], list[Subpattern]] = field(default_factory=dict)

    def components(self, n: int) -> list[list[int]]:
        """Connected components; each can be searched on its own (seed 004 §4.1)."""
        graph = nx.Graph()
        graph.add_nodes_from(range(n))
        graph.add_edges_from(self.edges)
        return [sorted(c) for c in nx.connected_components(graph)]


def build_graph(patterns: Sequence[Compiled],
                may_share: Callable[[int, int], bool] | None = None) -> MultiPatternGraph:
    """The MPG of a workload (seed 004 §4.1, App. A); with `may_share`, only pairs of
    patterns it admits are compared (those that can run at the same time, seed 003 §5.3)."""
    graph = MultiPatternGraph()
    by_label: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(patterns):
        for label in p.labels:
            by_label[label].append(i)
    for i, p in enumerate(patterns):
        common = Counter(j for label in p.labels for j in by_label[label] if j > i)
        for j, count in common.items():
            if count < 2 or p.pattern.operator != patterns[j].pattern.operator:
                continue
            if may_share is not None and not may_share(i, j):
                continue
            found = maximal_common(p, patterns[j])
            if found:
                graph.edges[(i, j)] = found
                for key in found:
                    if key not in graph.owners:
                        graph.owners[key] = set()
                    for k in (i, j):
                        if k not in graph.owners[key]:
                            graph.owners[key].add(k)
                            graph.peers[k].append(key)
    return graph


def maximal_common(a: Compiled, b: Compiled) -> list[Subpattern]:
    """The maximal common subpatterns of two patterns of the same operator, of size ≥ 2."""
    common = frozenset(a.labels) & frozenset(b.labels)
    conflicts = _condition_conflicts(a, b, common) + _order_conflicts(a, b, common)
    results: list[frozenset[str]] = []
    for subset in _maximal(common, conflicts):
        if len(subset) >= 2 and not any(subset < other for other in results):
            results = [r for r in results if not r < subset] + [subset]
    return [subpattern_key(a, s) for s in results]


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


def _condition_conflicts(a: Compiled, b: Compiled, common: frozenset[str]
                         ) -> list[frozenset[str]]:
    ca = {key: scope for key, scope in a.condition_scopes if scope <= common}
    cb = {key: scope for key, scope in b.condition_scopes if scope <= common}
    return [scope for key, scope in {**ca, **cb}.items() if (key in ca) != (key in cb)]


def _order_conflicts(a: Compiled, b: Compiled, common: frozenset[str]) -> list[frozenset[str]]:
    if not a.pattern.seq:
        return []
    return [frozenset((x, y)) for x, y in combinations(sorted(common), 2)
            if (a.index[x] < a.index[y]) != (b.index[x] < b.index[y])]


def _maximal(labels: frozenset[str], conflicts: list[frozenset[str]]) -> list[frozenset[str]]:
    """Maximal subsets of `labels` containing no conflict whole, by branching on which label
    of the first violated conflict to drop."""
    violated = next((c for c in conflicts if c <= labels), None)
    if violated is None:
        return [labels]
    out: list[frozenset[str]] = []
    for label in sorted(violated):
        for found in _maximal(labels - {label}, conflicts):
            if found not in out:
                out.append(found)
    return out
