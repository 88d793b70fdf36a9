"""How a user of shared nodes goes on from its first node's partial matches: the order of its
other variables, which of its plan tree's subtrees it builds whole, or not to share at all;
chosen once per job from the rates and selectivities the plan priced it with.

A join step that adds variables A to bound variables B builds, per window, the partial
matches of B ∪ A before the conditions across B and A filter them; over a stream a set of k
variables is built k·C/W times per time unit (docs/sharing.md), so a step costs

    rows(B, A) = |B ∪ A| · C(B ∪ A) / Π_{conditions across B, A} sel

with C the partial matches per window (`costmodels.trees.node_cost`, seed 004 §3.3, App. C).
A subtree joined whole also costs its own build (its cheapest order, over the whole slice);
another shared node's partial matches cost only the join; in a SEQ, joining a part of j
variables whole is searched by its latest event only, so it is priced at every interleaving,
binom(|B ∪ A|, j) times the ordered rows. The cheapest sequence of steps is
a DP over the sets of bound variables (the local plan generator's left-deep DP, seed 004 §4.2,
started from the node); a user whose own unshared order is cheaper than that does not share.
Without the plan's figures, variables linked by a condition to the bound ones come first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cepplan.costmodels.trees import node_cost
from cepplan.engine_adapter.runtime.spec import NEGATED, PLAIN, PatternSpec, Stages

Step = tuple[str, ...]  # one variable, another node's variables, or a subtree built whole


@dataclass(frozen=True)
class JoinModel:
    """A pattern as the plan priced it: per positive variable its rate, per set of variables
    the product of its conditions' selectivities, and its plan tree (None if not given)."""

    rates: Mapping[str, float]
    selectivities: Mapping[frozenset[str], float]
    tree: Any = None


@dataclass(frozen=True)
class UserJoin:
    """A user's steps after its first node, each step's variables in binding order, and
    the modelled rows of those steps and of the pattern's own order unshared."""

    steps: tuple[Step, ...]
    cost: float
    alone: float

    @property
    def shares(self) -> bool:
        """Whether going on from the node builds no more rows than evaluating alone."""
        return self.cost <= self.alone


def join_models(section: Mapping[str, Any]) -> dict[str, JoinModel]:
    """The plan's `sharing.join_model` entries (pattern -> figures), as far as given."""
    out = {}
    for name, entry in (section.get("join_model") or {}).items():
        sels: dict[frozenset[str], float] = {}
        for variables, sel in entry.get("conditions", ()):
            scope = frozenset(variables)
            sels[scope] = sels.get(scope, 1.0) * float(sel)
        out[name] = JoinModel({v: float(r) for v, r in entry["rates"].items()}, sels,
                              entry.get("tree"))
    return out


def user_join(spec: PatternSpec, stages: Stages, start: frozenset[str],
              nodes: Sequence[frozenset[str]], model: JoinModel | None) -> UserJoin:
    """The cheapest steps binding the pattern's positive variables beyond `start` (its first
    node's), joining each of `nodes` (its other nodes, disjoint) whole."""
    if model is None or not all(v in model.rates for v in _positives(spec)):
        return UserJoin(_linked_first(spec, stages, start, nodes), 0.0, 0.0)
    pricing = _Pricing(spec, model)
    atoms: list[tuple[frozenset[str], Step, float]] = [
        (node, tuple(sorted(node)), 0.0) for node in nodes]
    taken = start.union(*nodes)
    atoms += [(frozenset((v,)), (v,), 0.0) for v in _positives(spec) if v not in taken]
    for leaves in _subtrees(model.tree):
        if len(leaves) > 1 and not taken & leaves and \
                all(spec.operand(v).kind == PLAIN for v in leaves):
            inner, build = pricing.cheapest(frozenset(), [(frozenset((v,)), (v,), 0.0)
                                                          for v in sorted(leaves)])
            atoms.append((leaves, sum(inner, ()), build))
    steps, cost = pricing.cheapest(start, atoms)
    own = [v for v in spec.order if v in model.rates]
    alone = sum(pricing.rows(frozenset(own[:k]), frozenset(own[k:k + 1]))
                for k in range(len(own)))
    return UserJoin(steps, cost, alone)


class _Pricing:
    """rows(B, A) of one pattern (module doc) and the DP over sets of bound variables."""

    def __init__(self, spec: PatternSpec, model: JoinModel):
        self.model = model
        self.window = spec.window or 1.0
        self.seq = spec.operator == "SEQ"
        self._rows: dict[tuple[frozenset[str], frozenset[str]], float] = {}

    def rows(self, bound: frozenset[str], added: frozenset[str]) -> float:
        key = (bound, added)
        if key not in self._rows:
            self._rows[key] = self._priced(bound, added)
        return self._rows[key]

    def _priced(self, bound: frozenset[str], added: frozenset[str]) -> float:
        both = bound | added
        inside = {s: sel for s, sel in self.model.selectivities.items()
                  if s <= bound or s <= added}
        rows = len(both) * node_cost(both, self.window, self.model.rates, inside, self.seq)
        if self.seq and bound and len(added) > 1:  # two ordered parts joined whole are
            # searched by the latest event only: up to every interleaving of the parts
            rows *= math.comb(len(both), len(added))
        return rows

    def cheapest(self, start: frozenset[str],
                 atoms: Sequence[tuple[frozenset[str], Step, float]]
                 ) -> tuple[tuple[Step, ...], float]:
        """The cheapest sequence of atoms (disjoint from each other or not) covering every
        variable the atoms hold, from `start`; ties keep the atoms' order."""
        goal = start.union(*(a[0] for a in atoms))
        best: dict[frozenset[str], tuple[float, tuple[Step, ...]]] = {start: (0.0, ())}
        frontier = [start]
        while frontier:
            following: dict[frozenset[str], None] = {}
            for bound in sorted(frontier, key=len):
                cost, steps = best[bound]
                for variables, step, build in atoms:
                    if variables & bound:
                        continue
                    after = bound | variables
                    total = cost + build + self.rows(bound, variables)
                    if after not in best or total < best[after][0]:
                        best[after] = (total, (*steps, step))
                        following[after] = None
            frontier = list(following)
        cost, steps = best.get(goal, (math.inf, ()))
        return steps, cost


def _positives(spec: PatternSpec) -> list[str]:
    return [v for v in spec.order if spec.operand(v).kind != NEGATED]


def _subtrees(tree: Any) -> list[frozenset[str]]:
    """The leaves of every inner node of a plan tree (`[left, right]` pairs)."""
    if not isinstance(tree, list) or len(tree) != 2:
        return []
    left, right = _subtrees(tree[0]), _subtrees(tree[1])
    here = _leaves(tree[0]) | _leaves(tree[1])
    return [*left, *right, here]


def _leaves(tree: Any) -> frozenset[str]:
    if isinstance(tree, str):
        return frozenset((tree,))
    return _leaves(tree[0]) | _leaves(tree[1]) if isinstance(tree, list) else frozenset()


def _linked_first(spec: PatternSpec, stages: Stages, start: frozenset[str],
                  nodes: Sequence[frozenset[str]]) -> tuple[Step, ...]:
    """Without figures: the plan's order, but a variable (or node) linked by a condition to
    the bound ones before one that is not (which would multiply every partial match by all
    its events in the window)."""
    pending: list[Step] = []
    for var in _positives(spec):
        node = next((n for n in nodes if var in n), None)
        step = (var,) if node is None else tuple(sorted(node))
        if var not in start and step not in pending:
            pending.append(step)
    bound, steps = set(start), []
    while pending:
        step = next((s for s in pending
                     if any(p.variables & set(s) and p.variables & bound for p in stages.joins)),
                    pending[0])
        pending.remove(step)
        steps.append(step)
        bound |= set(step)
    return tuple(steps)
