"""`search`: the whole evaluation search — MPG, components, local search or a baseline — from a
`Problem` to a `SearchResult` (seed 004 §4–§5). Imports nothing from the planner.

Starts from every pattern's cheapest local tree (§4.2) and searches each connected component
of the multi-pattern graph in turn, with a share of the time limit proportional to its size.

Anytime within the whole limit: the patterns' preparation stops at it, and a search left
less than `AFTER_PREPARING` times the preparation's time after it gives up
(`SearchOutOfTime`: no result yet); the graph is built in at most `GRAPH_SHARE` of the time
left (a cut graph offers fewer subtrees to share); the start trees' join orders are priced in
at most `ORDERS_SHARE` of the time left then (the rest keep their cheaper side first); the
moves stop early enough to leave for the result `FINISH_FACTOR` times what building the start
multitree took, or are not started, and a tree they changed is priced only before the limit.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

import networkx as nx

from cepplan.costmodels.join_orders import EXHAUSTIVE
from cepplan.search.baselines import (
    shared_trees,
    trivial_trees,
    unshared_cost,
)
from cepplan.search.graph import build_graph
from cepplan.search.local import (
    BUSHY,
    LEFT_DEEP,
    Compiled,
    IndexTree,
    Interner,
    best_tree,
    mask_of,
    nodes_of,
)
from cepplan.search.metaheuristics import SA, TABU, Progress, anneal, tabu
from cepplan.search.multitree import Multitree, multi_cost
from cepplan.search.neighbourhood import Neighbourhood, parse_neighbourhood
from cepplan.search.problem import Problem, SearchOutOfTime

SH, RE = "sh", "re"
ALGORITHMS = (SA, TABU, SH, RE)
SHAPES = (BUSHY, LEFT_DEEP)
# Measured on 300 and 1,200 random patterns: the SH baseline and the start multitree took
# 1.1-2.7x the preparation (compiling each pattern, its trivial and cheapest trees); the
# final multitree, its shared nodes and the patterns' names 0.3-0.9x the start multitree
AFTER_PREPARING = 2.0
FINISH_FACTOR = 2.0
GRAPH_SHARE = 0.5  # of the time left after the preparation, at most, for the graph
ORDERS_SHARE = 0.5  # of the time left after the graph, at most, for the start's join orders


VarTree = object  # a variable name or a pair of VarTrees


@dataclass(frozen=True)
class SharedNode:
    """A subtree evaluated once for several patterns: each user's variables, the window."""

    users: Mapping[str, VarTree]
    window: float
    size: int
    cost: float = 0.0  # modelled partial matches per window (its Cost_tree^multi share)


@dataclass(frozen=True)
class SearchResult:
    """The chosen multitree and how it compares (Cost_tree^multi, seed 004 App. C)."""

    trees: Mapping[str, VarTree]
    orders: Mapping[str, tuple[str, ...]]  # join order per pattern, consistent with its tree
    shared: tuple[SharedNode, ...]
    cost: float
    trivial_cost: float
    sh_cost: float
    re_cost: float
    algorithm: str
    neighbourhood: str
    shape: str
    seed: int
    time_limit: float
    steps: int
    seconds: float
    trace: tuple[tuple[float, float], ...]
    components: int
    edges: int
    skipped: Mapping[str, str]
    graph_complete: bool = True  # False: the time limit cut building the graph


def search(problem: Problem, *, algorithm: str = SA, neighbourhood: str = "edge",
           shape: str = BUSHY, seed: int = 0, time_limit: float = 10.0,
           patience: int | None = None) -> SearchResult:
    """The cheapest multitree found within `time_limit` seconds (best so far when it runs
    out); ValueError for an unknown algorithm, neighbourhood or shape or a limit ≤ 0."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"{algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    if shape not in SHAPES:
        raise ValueError(f"{shape!r} is not one of {', '.join(SHAPES)}")
    if not time_limit > 0:
        raise ValueError(f"the time limit must be positive, got {time_limit}")
    kind, k = parse_neighbourhood(neighbourhood)
    start = time.perf_counter()
    end = start + time_limit
    compiled, local = _prepare(problem, shape, end)
    trivial = unshared_cost(compiled, trivial_trees(compiled))
    re_cost = unshared_cost(compiled, local)
    needed = AFTER_PREPARING * (time.perf_counter() - start)
    if time.perf_counter() + needed > end:
        raise SearchOutOfTime(f"{len(compiled)} patterns need about {needed:.2g} s more")
    graph = build_graph(compiled, (lambda i, j: problem.may_share(
        compiled[i].pattern.name, compiled[j].pattern.name)) if problem.together else None,
        deadline=time.perf_counter() + GRAPH_SHARE * (end - needed - time.perf_counter()))
    sh = shared_trees(compiled, graph)
    sh_cost = multi_cost(compiled, sh)
    building = time.perf_counter()
    state = Multitree(compiled, sh if algorithm == SH else local)
    start_trees = list(state.trees)
    # the join orders of the start's trees, priced now so that the time they take is kept
    # for the end: only the trees the moves change are priced again then
    priced_until = building + ORDERS_SHARE * (end - building)
    start_orders = [_join_order(c, t, priced_until)
                    for c, t in zip(compiled, start_trees, strict=True)]
    finish = FINISH_FACTOR * (time.perf_counter() - building)
    # the moves stop at 90 % of the limit at the latest: building the neighbourhoods and the
    # result after them took up to 0.26 s of a 1.5 s limit on a loaded machine (300 patterns)
    deadline = min(start + 0.9 * time_limit, end - finish)
    progress = Progress(state.cost, list(state.trees), started=start)
    progress.trace.append((round(time.perf_counter() - start, 4), state.cost))
    components = [] if time.perf_counter() >= deadline else \
        [c for c in graph.components(len(compiled)) if len(c) > 1]
    if algorithm in (SA, TABU):
        rng = random.Random(seed)
        left = total = sum(len(c) for c in components)
        for members in components:
            now = time.perf_counter()
            until = now + (deadline - now) * len(members) / left
            # each component's patience in proportion to its size, as its time is
            patient = None if patience is None else max(1, round(patience * len(members) / total))
            left -= len(members)
            moves = Neighbourhood(compiled, graph, members, kind, k, shape)
            run = anneal if algorithm == SA else tabu
            run(state, moves, rng, until, progress, patience=patient)
            state.apply({p: progress.best_trees[p] for p in members})
    trees = progress.best_trees
    final = Multitree(compiled, trees)
    return SearchResult(
        trees={c.pattern.name: _names(c, t) for c, t in zip(compiled, trees, strict=True)},
        orders={c.pattern.name: order if t == first else _join_order(c, t, end)
                for c, t, first, order
                in zip(compiled, trees, start_trees, start_orders, strict=True)},
        shared=_shared(final), cost=final.cost, trivial_cost=trivial, sh_cost=sh_cost,
        re_cost=re_cost, algorithm=algorithm, neighbourhood=neighbourhood, shape=shape,
        seed=seed, time_limit=time_limit, steps=progress.steps,
        seconds=time.perf_counter() - start, trace=tuple(progress.trace),
        components=len(components), edges=len(graph.edges), skipped=problem.skipped,
        graph_complete=graph.complete)


def _prepare(problem: Problem, shape: str, end: float) -> tuple[list[Compiled], list[IndexTree]]:
    """Every pattern compiled, with its cheapest local tree (RE, seed 004 §4.2's start);
    SearchOutOfTime when `end` passes first."""
    interner = Interner()
    groups = _run_together(problem)
    compiled, local = [], []
    for pattern in problem.patterns:
        if time.perf_counter() > end:
            raise SearchOutOfTime(f"{len(compiled)} of {len(problem.patterns)} patterns "
                                  "prepared")
        compiled.append(Compiled(pattern, interner, groups.get(pattern.name, 0)))
        local.append(best_tree(compiled[-1], shape=shape)[0])
    return compiled, local


def _run_together(problem: Problem) -> dict[str, int]:
    """Per pattern, its group of patterns that can run at the same time, closed under
    overlap (`Problem.together`); identical subtrees merge only within one group."""
    if not problem.together:
        return {}
    graph = nx.Graph()
    for members in problem.together:
        names = sorted(members)
        graph.add_nodes_from(names)
        graph.add_edges_from(pairwise(names))
    return {name: i for i, part in enumerate(nx.connected_components(graph)) for name in part}


def _shared(state: Multitree) -> tuple[SharedNode, ...]:
    """The inner nodes two or more patterns use, each with every user's own subtree."""
    out = []
    for node in state.shared_nodes():
        users = {}
        for p in sorted(state.users[node]):
            c = state.compiled[p]
            sub = next(n for n in nodes_of(state.trees[p]) if c.node_id(n) == node)
            users[c.pattern.name] = _names(c, sub)
        out.append(SharedNode(users, max(state.users[node].values()), state.size[node],
                              state.contribution.get(node, 0.0)))
    return tuple(sorted(out, key=lambda s: (-s.size, -len(s.users), sorted(s.users))))


def _join_order(compiled: Compiled, tree: IndexTree,
                deadline: float = math.inf) -> tuple[str, ...]:
    """The order the matcher joins the tree's leaves in: each node's two sides one after the
    other, the side first that makes the order's look-ups read the fewest rows
    (`SearchPattern.join_work`: a side without a condition to the other is a cross product).
    Ties, trees with more than `EXHAUSTIVE` such orders and trees reached once `deadline`
    has passed keep the side with fewer expected partial matches first."""
    inner = sum(isinstance(node, tuple) for node in nodes_of(tree))
    first = _cheaper_side_first(compiled, tree)
    if 2 ** inner > EXHAUSTIVE or time.perf_counter() >= deadline:
        return first
    return compiled.pattern.join_work([first, *_leaf_orders(compiled, tree)]).order


def _cheaper_side_first(compiled: Compiled, tree: IndexTree) -> tuple[str, ...]:
    """The tree's leaves, the child with fewer expected partial matches first at every node."""
    if not isinstance(tree, tuple):
        return (compiled.pattern.variables[tree],)
    left, right = sorted(tree, key=lambda t: compiled.cost[mask_of(t)])
    return _cheaper_side_first(compiled, left) + _cheaper_side_first(compiled, right)


def _leaf_orders(compiled: Compiled, tree: IndexTree) -> list[tuple[str, ...]]:
    """Every order of the tree's leaves that joins each node's two sides one after the other."""
    if not isinstance(tree, tuple):
        return [(compiled.pattern.variables[tree],)]
    lefts, rights = _leaf_orders(compiled, tree[0]), _leaf_orders(compiled, tree[1])
    return [o for a in lefts for b in rights for o in (a + b, b + a)]


def _names(compiled: Compiled, tree: IndexTree) -> VarTree:
    if isinstance(tree, tuple):
        return (_names(compiled, tree[0]), _names(compiled, tree[1]))
    return compiled.pattern.variables[tree]
