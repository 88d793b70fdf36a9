"""Evaluation-plan costs: expected partial matches per order, tree and multitree (seed 004
§3.3, App. C), with cepplan's adjustments for SEQ order, Kleene closure and negation.

A plan node over a set S of a pattern's positive variables holds the partial matches of S
that lie in one window. Counted in a window of length W of a Poisson stream (docs/sharing.md):

    C(S) = W^|S| · Π_{v∈S} r_v · Π_{conditions inside S} sel · ord(S)

with ord(S) = 1/|S|! for a SEQ (the only one of the |S|! arrangements in sequence order) and
1 for AND. Seed 004 writes the same product without ord (§3.3, App. C). A Kleene variable b+
stands for every non-empty subset of its events (seed 001 §2.3, step 3): E[2^N − 1] = e^{rW} − 1
for N ~ Poisson(rW), so its effective rate is (e^{rW} − 1)/W (capped at the runtime's subset
cap); a bounded repetition b{n,m} for its subsets of n to m events, Σ_{k=n}^{m} (rW)^k/k!
(`kleene_rate`). A strict Kleene variable (strategy strict) stands for its runs of
back-to-back events instead, r · Σ_{k=n}^{m} p^(k−1) with p its share of the partition's
events. Negated variables form no partial matches of their own: they veto complete matches
on top of the root.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial

Tree = object  # a variable name (leaf) or a pair (left, right) of trees


def node_cost(variables: Iterable[str], window: float, rates: Mapping[str, float],
              selectivities: Mapping[frozenset[str], float], seq: bool,
              factors: Mapping[frozenset[str], float] | None = None) -> float:
    """C(S): expected partial matches of the variables S within one window (seed 004 App. C,
    C(N) = C(L)·C(R)·sel_{L,R} unrolled, times ord(S)); for a partitioned pattern times
    κ(S) from `factors`, its partial matches within keys (`costmodels.keyed`)."""
    names = frozenset(variables)
    product = (factors or {}).get(names, 1.0)
    for var in names:
        product *= window * rates[var]
    for scope, sel in selectivities.items():
        if scope <= names:
            product *= sel
    return product / math.factorial(len(names)) if seq else product


def cost_ord(order: Sequence[str], window: float, rates: Mapping[str, float],
             selectivities: Mapping[frozenset[str], float], seq: bool,
             factors: Mapping[frozenset[str], float] | None = None) -> float:
    """Cost_ord (seed 004 §3.3): Σ_k Cost_ord^k over the prefixes of an evaluation order."""
    return sum(node_cost(order[:k], window, rates, selectivities, seq, factors)
               for k in range(1, len(order) + 1))


def tree_leaves(tree: Tree) -> tuple[str, ...]:
    """The variables of a tree, left to right (the join order it implies)."""
    if isinstance(tree, tuple):
        return tree_leaves(tree[0]) + tree_leaves(tree[1])
    return (tree,)


def tree_nodes(tree: Tree) -> list[Tree]:
    """Every node of a tree, children before parents."""
    if isinstance(tree, tuple):
        return [*tree_nodes(tree[0]), *tree_nodes(tree[1]), tree]
    return [tree]


def cost_tree(tree: Tree, window: float, rates: Mapping[str, float],
              selectivities: Mapping[frozenset[str], float], seq: bool) -> float:
    """Cost_tree (seed 004 App. C): Σ_{N ∈ nodes(T)} C(N)."""
    return sum(node_cost(tree_leaves(node), window, rates, selectivities, seq)
               for node in tree_nodes(tree))


def shared_node_cost(users: Iterable[tuple[float, Callable[[float], float]]]) -> float:
    """C(N) of a node several patterns use, given each user's (window, C(N) as a function of
    the window): the node holds the partial matches of the widest window (seed 004 §3.1), and
    where the users' figures differ (a Kleene rate depends on the window; selectivities are
    measured per pattern) the largest estimate — a function of the set of users, never of
    their order."""
    users = list(users)
    widest = max(window for window, _ in users)
    return max(cost(widest) for _, cost in users)


def cost_tree_multi(nodes: Iterable[tuple[object, float, Callable[[float], float]]]) -> float:
    """Cost_tree^multi (seed 004 App. C): each distinct node counted once. A node is given per
    user as (identity, the user's window, its C(N) as a function of the window); a shared
    node costs `shared_node_cost` of its users."""
    users: dict[object, list[tuple[float, Callable[[float], float]]]] = {}
    for key, window, cost in nodes:
        users.setdefault(key, []).append((window, cost))
    return sum(shared_node_cost(each) for each in users.values())


def kleene_rate(rate: float, window: float, cap: int, least: int = 1,
                most: int | None = None, partition_rate: float | None = None) -> float:
    """Effective rate of a Kleene variable: `back_to_back_rate` when its events follow each
    other in the partition (`partition_rate`: the partition's total rate, strategy strict),
    else `subset_rate`."""
    if partition_rate is not None:
        return back_to_back_rate(rate, partition_rate, cap, least, most)
    return subset_rate(rate, window, cap, least, most)


def back_to_back_rate(rate: float, partition_rate: float, cap: int, least: int = 1,
                      most: int | None = None) -> float:
    """Effective rate of a strict Kleene variable: its runs of back-to-back events. Of a
    partition's events at total rate R, a share p = r/R are the variable's; a run of k of
    them ends at one of its events when the k − 1 events before it are too, probability
    p^(k−1), so r · Σ_{k=least}^{min(most, cap)} p^(k−1). Derived here from the Poisson
    model of seed 004 §3.3 (independent Poisson types: each event's type is drawn by its
    share); runs are assumed to fit in the window."""
    top = cap if most is None else min(most, cap)
    share = min(1.0, rate / partition_rate) if partition_rate > 0 else 0.0
    return rate * sum(share ** (k - 1) for k in range(least, top + 1))


def subset_rate(rate: float, window: float, cap: int, least: int = 1,
                most: int | None = None) -> float:
    """Effective rate of a Kleene variable binding `least` to `most` events (None: no most;
    Kleene+ is 1 to None): its sets within a window per time unit. Of its N ~ Poisson(λ)
    events in a window, λ = rW, E[C(N, k)] = λ^k/k! sets have k events, so

        Σ_{k=least}^{most} λ^k/k!  (Kleene+: e^λ − 1)

    of them, at most the Σ_{k=least}^{min(most, cap)} C(cap, k) sets of the `cap` events the
    runtime enumerates (Kleene+: 2^cap − 1). Summed term by term, until the cut or until
    the terms vanish."""
    top = cap if most is None else min(most, cap)
    enumerated = sum(math.comb(cap, k) for k in range(least, top + 1))
    lam, total, term, k = rate * window, 0.0, 1.0, 0
    while (most is None or k < most) and total < enumerated:
        k += 1
        term *= lam / k  # λ^k/k!
        total += term if k >= least else 0.0
        if k > lam and term <= 1e-17 * total:
            break
    return min(total, enumerated) / window


def no_event_probability(rate: float, window: float, operator: str, positives: int,
                         edge: bool) -> float:
    """P(no event of a negated type where it would veto a match). AND: anywhere in the
    window, e^{−rW}. SEQ: in the gap between its neighbours — an inner gap of k uniformly
    placed events in W spans W/(k+1) on average, a leading/trailing one 2W/(k+1) (the runtime
    searches from the window's start / up to its end); e^{−r·E[gap]} (Jensen: a lower
    bound)."""
    if operator == "AND":
        return math.exp(-rate * window)
    gap = (2.0 if edge else 1.0) * window / (positives + 1)
    return math.exp(-rate * gap)


def instances(orders: Iterable[tuple[Sequence[str], float, Mapping[str, float],
                                     Mapping[frozenset[str], float], bool]]) -> float:
    """#inst of a multi-pattern tree (seed 004 §3.3): the orders' common prefixes merged, each
    distinct prefix P_N costing Cost_ord^{|P_N|} as a shared node (`shared_node_cost`: the
    largest window of the patterns sharing it, §3.1). An order is (labels, window, rates,
    selectivities, seq) over labels, with plain rates (no Kleene variable)."""
    prefixes: dict[tuple[str, ...], list[tuple[float, Callable[[float], float]]]] = {}
    for order, window, rates, selectivities, seq in orders:
        for k in range(1, len(order) + 1):
            key = tuple(order[:k])
            prefixes.setdefault(key, []).append(
                (window, partial(node_cost, key, rates=rates, selectivities=selectivities,
                                 seq=seq)))
    return sum(shared_node_cost(users) for users in prefixes.values())
