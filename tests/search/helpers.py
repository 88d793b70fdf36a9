"""Small random search problems and brute-force enumeration of trees (the references)."""

from __future__ import annotations

import itertools
import random
from types import MappingProxyType

from cepplan.search.problem import Condition, SearchPattern


def random_pattern(rng: random.Random, size: int, name: str = "p", types: str = "ABCDEFGH",
                   operator: str | None = None, window: float = 1.0) -> SearchPattern:
    """Distinct types, rates 0.2–8, conditions on about half the pairs."""
    chosen = rng.sample(types, size)
    variables = tuple(f"v{i}" for i in range(size))
    labels = {v: t for v, t in zip(variables, chosen, strict=True)}
    rates = {v: rng.uniform(0.2, 8.0) for v in variables}
    pairs = list(itertools.combinations(variables, 2))
    conditions = tuple(
        Condition(frozenset(pair), f"{labels[pair[0]]}<{labels[pair[1]]}",
                  rng.uniform(0.003, 0.92))
        for pair in rng.sample(pairs, len(pairs) // 2))
    return SearchPattern(name, operator or rng.choice(["SEQ", "AND"]), window, variables,
                         MappingProxyType(labels), MappingProxyType(rates), conditions)


def all_trees(leaves: tuple) -> list:
    """Every unordered binary tree over the leaves ((2n−3)!! of them)."""
    if len(leaves) == 1:
        return [leaves[0]]
    first, rest = leaves[0], leaves[1:]
    out = []
    for r in range(len(rest) + 1):
        for others in itertools.combinations(rest, r):
            left = (first, *others)
            right = tuple(x for x in rest if x not in others)
            if not right:
                continue
            out += [(a, b) for a in all_trees(left) for b in all_trees(right)]
    return out


def left_deep_trees(leaves: tuple) -> list:
    out = []
    for order in itertools.permutations(leaves):
        tree = order[0]
        for leaf in order[1:]:
            tree = (tree, leaf)
        out.append(tree)
    return out


def same_tree(a, b) -> bool:
    """Equal up to the order of children."""
    if isinstance(a, tuple) != isinstance(b, tuple):
        return False
    if not isinstance(a, tuple):
        return a == b
    return (same_tree(a[0], b[0]) and same_tree(a[1], b[1])) or \
        (same_tree(a[0], b[1]) and same_tree(a[1], b[0]))


def contains(tree, sub) -> bool:
    if same_tree(tree, sub):
        return True
    return isinstance(tree, tuple) and (contains(tree[0], sub) or contains(tree[1], sub))


def random_problem(rng: random.Random, n: int, sizes: tuple[int, int], types: str,
                   operator: str = "SEQ", window: float = 1.0) -> list[SearchPattern]:
    """Patterns whose rates and condition selectivities are properties of the types (as in a
    real stream), so that equal subpatterns cost the same in every pattern."""
    rate = {t: rng.uniform(0.2, 8.0) for t in types}
    sel = {(a, b): rng.uniform(0.003, 0.92) for a in types for b in types}
    patterns = []
    for i in range(n):
        chosen = rng.sample(types, rng.randint(*sizes))
        if operator == "SEQ":
            chosen.sort()  # a common order, so that patterns overlap
        variables = tuple(f"x{i}_{j}" for j in range(len(chosen)))
        labels = dict(zip(variables, chosen, strict=True))
        pairs = [(a, b) for a, b in itertools.combinations(variables, 2)
                 if (ord(labels[a]) + ord(labels[b])) % 2]  # the same pairs in every pattern
        conditions = tuple(Condition(frozenset(p), f"{labels[p[0]]}<{labels[p[1]]}",
                                     sel[(labels[p[0]], labels[p[1]])]) for p in pairs)
        patterns.append(SearchPattern(f"p{i}", operator, window, variables,
                                      MappingProxyType(labels),
                                      MappingProxyType({v: rate[labels[v]] for v in variables}),
                                      conditions))
    return patterns
