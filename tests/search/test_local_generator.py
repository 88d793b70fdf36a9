"""The local plan generator's DP against brute-force enumeration of every order and tree."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from cepplan.costmodels.trees import cost_tree, tree_leaves
from cepplan.search.baselines import greedy_trees
from cepplan.search.local import BUSHY, LEFT_DEEP, Compiled, Interner, best_tree
from tests.search.helpers import all_trees, contains, left_deep_trees, random_pattern


def reference_cost(pattern, tree) -> float:
    """Cost_tree from the pure cost function, over variable names."""
    named = _named(pattern, tree)
    return cost_tree(named, pattern.window, pattern.rates, pattern.selectivities, pattern.seq)


def _named(pattern, tree):
    if isinstance(tree, tuple):
        return (_named(pattern, tree[0]), _named(pattern, tree[1]))
    return pattern.variables[tree]


@pytest.mark.parametrize("size", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("seed", range(4))
def test_cheapest_bushy_and_left_deep_equal_brute_force(size, seed):
    pattern = random_pattern(random.Random(seed * 10 + size), size)
    compiled = Compiled(pattern, Interner())
    leaves = tuple(range(size))
    for shape, candidates in ((BUSHY, all_trees(leaves)), (LEFT_DEEP, left_deep_trees(leaves))):
        tree, cost = best_tree(compiled, shape=shape)
        brute = min(reference_cost(pattern, t) for t in candidates)
        assert cost == pytest.approx(brute, rel=1e-9)
        assert reference_cost(pattern, tree) == pytest.approx(brute, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_cheapest_tree_containing_given_subtrees_equals_brute_force(seed):
    rng = random.Random(seed)
    size = rng.randint(4, 6)
    pattern = random_pattern(rng, size)
    compiled = Compiled(pattern, Interner())
    leaves = list(range(size))
    rng.shuffle(leaves)
    first = rng.choice(all_trees(tuple(leaves[:2])))
    second = rng.choice(all_trees(tuple(leaves[2:4])))
    candidates = all_trees(tuple(range(size)))
    for required in ([first], [first, second]):
        tree, cost = best_tree(compiled, required)
        assert all(contains(tree, sub) for sub in required)
        brute = min(reference_cost(pattern, t) for t in candidates
                    if all(contains(t, sub) for sub in required))
        assert cost == pytest.approx(brute, rel=1e-9)
    prefix = (leaves[0], leaves[1])
    tree, cost = best_tree(compiled, [prefix], LEFT_DEEP)
    brute = min(reference_cost(pattern, t) for t in left_deep_trees(tuple(range(size)))
                if contains(t, prefix))
    assert cost == pytest.approx(brute, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_greedy_reordering_sorts_unconditioned_events_by_rate_and_never_beats_the_dp(seed):
    """RE as seed 004 §6.2 defines it: without conditions an AND's greedy order is by
    ascending rate (the analytic optimum of a left-deep order); with conditions it costs at
    least the cheapest order over all n! of them."""
    rng = random.Random(seed)
    plain = random_pattern(rng, 5, operator="AND")
    plain = replace(plain, conditions=())
    (tree,) = greedy_trees([Compiled(plain, Interner())])
    assert list(tree_leaves(_named(plain, tree))) == sorted(plain.variables,
                                                           key=plain.rates.__getitem__)
    pattern = random_pattern(rng, 5)
    (tree,) = greedy_trees([Compiled(pattern, Interner())])
    brute = min(reference_cost(pattern, t) for t in left_deep_trees(tuple(range(5))))
    assert reference_cost(pattern, tree) >= brute * (1 - 1e-9)
