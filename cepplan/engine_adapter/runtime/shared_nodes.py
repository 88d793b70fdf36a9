"""The plan's shared nodes read once per job: which patterns provably share each (seed 004 §5).

A user takes a node only when its part of the pattern provably is the node: same types and
kinds, same SEQ order, the same filters and join conditions up to variable names, so matches
are identical with and without sharing. A pattern uses several disjoint nodes when the plan
has them (§5's multitrees), the largest first; patterns linked through nodes form a sharing
group. OR patterns are not shared. `shared_plan` evaluates what is read here.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import product
from typing import Any

from cepplan.engine_adapter.runtime.job import Job
from cepplan.engine_adapter.runtime.spec import PatternSpec, Stages, compile_pattern
from cepplan.engine_adapter.runtime.user_order import (
    JoinModel,
    UserJoin,
    join_models,
    user_join,
)


@dataclass(frozen=True)
class NodeUse:
    """One pattern's use of a shared node: which node, and its variable for each of the
    node's (reference) variables."""

    node: int
    names: Mapping[str, str]  # node variable -> this pattern's variable


@dataclass(frozen=True)
class SharedNode:
    """A shared subtree as the runtime evaluates it: a sub-pattern over the reference
    user's variables (its join order the subtree's leaves) and the window it is kept for."""

    index: int
    spec: PatternSpec
    stages: Stages
    modelled: float | None  # the plan's expected partial matches per window, when given


@dataclass(frozen=True)
class SharingPlan:
    """The usable shared nodes of a job and each pattern's uses of them (disjoint parts of
    the pattern, largest first)."""

    nodes: tuple[SharedNode, ...]
    uses: Mapping[str, tuple[NodeUse, ...]]
    # per user, how its join goes on from its first node (`user_order`)
    joins: Mapping[str, UserJoin] = field(default_factory=dict)

    def groups(self) -> list[list[str]]:
        """Patterns connected through shared nodes (evaluated together per partition)."""
        owner: dict[int, str] = {}
        parent = {name: name for name in self.uses}

        def root(name: str) -> str:
            while parent[name] != name:
                parent[name] = parent[parent[name]]
                name = parent[name]
            return name

        for name, uses in self.uses.items():
            for use in uses:
                other = owner.setdefault(use.node, name)
                parent[root(name)] = root(other)
        members: dict[str, list[str]] = {}
        for name in self.uses:
            members.setdefault(root(name), []).append(name)
        return list(members.values())

    def members(self, name: str) -> list[str]:
        """The sharing group of pattern `name` (the plan's order)."""
        return next(g for g in self.groups() if name in g)

    def users(self, node: int) -> list[str]:
        """The patterns fed from node `node`."""
        return list(self._users.get(node, ()))

    @cached_property
    def _users(self) -> dict[int, list[str]]:
        users: dict[int, list[str]] = {}
        for name in sorted(self.uses):
            for node in dict.fromkeys(u.node for u in self.uses[name]):
                users.setdefault(node, []).append(name)
        return users


def used_sharing(job: Job) -> SharingPlan | None:
    """The job's shared plan, or None when it shares nothing (no shared node has two
    users left)."""
    if not (job.data.get("sharing") or {}).get("shared"):
        return None
    plan = sharing_plan(job)
    return plan if plan.uses else None


def sharing_plan(job: Job, alone: Collection[str] = ()) -> SharingPlan:
    """Read the job's `sharing` section (the plan's) into nodes each user provably equals;
    the patterns `alone` are evaluated on their own (the context stage's deriving ones)."""
    section = job.data.get("sharing") or {}
    candidates: dict[str, list[tuple[int, NodeUse]]] = {}
    nodes: list[SharedNode] = []
    for index, entry in enumerate(section.get("shared", ())):
        users = {n: t for n, t in entry.get("users", {}).items()
                 if n not in alone and _plannable(job, n)}
        if len(users) < 2:
            continue
        ref_name, ref_tree = next(iter(users.items()))
        ref = job.pattern(ref_name)
        leaves = _leaves(ref_tree)
        window = max(float(entry["window"]), *(job.pattern(n).window for n in users))
        spec = sub_spec(ref, leaves, window, f"{ref_name}/shared{index}")
        node = SharedNode(len(nodes), spec, compile_pattern(spec), entry.get("cost"))
        for name, tree in users.items():
            mapping = _correspondence(ref_tree, tree, ref, job.pattern(name))
            if mapping is not None:
                candidates.setdefault(name, []).append((len(leaves),
                                                        NodeUse(node.index, mapping)))
        nodes.append(node)
    models = join_models(section)
    known: dict[tuple[str, tuple[int, ...]], UserJoin] = {}  # (user, its nodes) -> join
    while True:  # users that build fewer rows alone leave; their nodes may then be lonely
        uses = _chosen_uses(candidates)
        joins = {}
        for name, chosen in uses.items():
            key = (name, tuple(u.node for u in chosen))
            if key not in known:
                known[key] = _user_join(job, name, chosen, nodes, models.get(name))
            joins[name] = known[key]
        alone = [name for name, join in joins.items() if not join.shares]
        if not alone:
            return SharingPlan(tuple(nodes), uses, joins)
        for name in alone:
            del candidates[name]


def _user_join(job: Job, name: str, uses: Sequence[NodeUse], nodes: Sequence[SharedNode],
               model: JoinModel | None) -> UserJoin:
    """`user_order.user_join` for one user, its nodes' variables under its own names."""
    sets = [frozenset(use.names[v] for v in nodes[use.node].spec.order) for use in uses]
    return user_join(job.pattern(name), job.stages[name], sets[0], sets[1:], model)


def _chosen_uses(candidates: Mapping[str, list[tuple[int, NodeUse]]]
                 ) -> dict[str, tuple[NodeUse, ...]]:
    """Per pattern, disjoint nodes, largest first; a node only one pattern would use is no
    sharing, so it is dropped and the choice made again without it until none is left."""
    dead: set[int] = set()
    while True:
        uses: dict[str, tuple[NodeUse, ...]] = {}
        for name, found in candidates.items():
            taken: set[str] = set()
            chosen = []
            for _, use in sorted(found, key=lambda c: (-c[0], c[1].node)):
                if use.node in dead or taken & set(use.names.values()):
                    continue
                taken |= set(use.names.values())
                chosen.append(use)
            if chosen:
                uses[name] = tuple(chosen)
        count: dict[int, int] = {}
        for chosen in uses.values():
            for use in chosen:
                count[use.node] = count.get(use.node, 0) + 1
        lonely = {node for node, n in count.items() if n < 2}
        if not lonely:
            return uses
        dead |= lonely


def _plannable(job: Job, name: str) -> bool:
    try:
        spec = job.pattern(name)
    except KeyError:
        return False
    return spec.operator != "OR" and spec.window is not None and \
        not any(job.is_complex(o.type) for o in spec.operands)


def _leaves(tree: Any) -> tuple[str, ...]:
    return (tree,) if isinstance(tree, str) else _leaves(tree[0]) + _leaves(tree[1])


def sub_spec(spec: PatternSpec, leaves: Sequence[str], window: float, name: str) -> PatternSpec:
    """The node as a pattern of its own: its operands, the conditions among them only."""
    inside = set(leaves)
    return replace(spec, name=name.replace("/", "_"),
                   operands=tuple(o for o in spec.operands if o.var in inside),
                   predicates=tuple(p for p in spec.predicates if p.variables <= inside),
                   window=window, order=tuple(leaves), steps=(), emit={})


def _correspondence(ref_tree: Any, tree: Any, ref: PatternSpec,
                    spec: PatternSpec) -> dict[str, str] | None:
    """A renaming of the reference user's node variables to this user's under which both
    parts are the same sub-pattern (trees equal up to child order), or None."""
    for mapping in _matchings(ref_tree, tree, ref, spec):
        if _same_part(ref, spec, mapping):
            return mapping
    return None


def _matchings(a: Any, b: Any, ref: PatternSpec, spec: PatternSpec):
    if isinstance(a, str) or isinstance(b, str):
        if isinstance(a, str) and isinstance(b, str):
            x, y = ref.operand(a), spec.operand(b)
            if (x.type, x.kind) == (y.type, y.kind):
                yield {a: b}
        return
    for left, right in ((b[0], b[1]), (b[1], b[0])):
        for m1, m2 in product(list(_matchings(a[0], left, ref, spec)),
                              list(_matchings(a[1], right, ref, spec))):
            yield {**m1, **m2}


def _same_part(ref: PatternSpec, spec: PatternSpec, mapping: Mapping[str, str]) -> bool:
    """Same operator, SEQ order and conditions among the node's variables, up to names."""
    if (ref.operator, ref.partition_by) != (spec.operator, spec.partition_by) or \
            len(set(mapping.values())) != len(mapping):
        return False
    if ref.operator == "SEQ":
        ref_order = sorted(mapping, key=lambda v: ref.operand(v).position)
        if [mapping[v] for v in ref_order] != sorted(mapping.values(),
                                                    key=lambda v: spec.operand(v).position):
            return False
    inside_ref, inside = set(mapping), set(mapping.values())
    mine = sorted(json.dumps(p.tree) for p in spec.predicates if p.variables <= inside)
    theirs = sorted(json.dumps(renamed_tree(p.tree, mapping)) for p in ref.predicates
                    if p.variables <= inside_ref)
    return mine == theirs


def renamed_tree(tree: Any, mapping: Mapping[str, str]) -> Any:
    if not isinstance(tree, list) or not tree:
        return tree
    if tree[0] == "attr":
        return ["attr", mapping.get(tree[1], tree[1]), *tree[2:]]
    if tree[0] == "kleene":
        return ["kleene", tree[1], mapping.get(tree[2], tree[2]), *tree[3:]]
    return [tree[0], *(renamed_tree(t, mapping) for t in tree[1:])]
