"""A group of patterns over one partition evaluated as a shared plan (seed 004 §3.1, §5).

The plan's `sharing.shared` nodes are subtrees several patterns contain. Per partition each
node's partial matches (its events joined by the node's conditions, in the node's window,
the largest of its users') are computed ONCE; every user then starts its join from them:
only rows within its own window are kept, its remaining variables are joined on top in its
plan's order, and its own Kleene expansion and negation follow (`matcher._Context`).

A user takes a node only when its part of the pattern provably is the node: same types and
kinds, same SEQ order, the same filters and join conditions up to variable names (checked
here, once per job), so matches are identical with and without sharing. A pattern uses its
largest usable node; OR patterns are not shared.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import Any

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.job import Job, PartitionOutput, needed_attributes, partitions
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS, Matches, _Context, _filter_rows
from cepplan.engine_adapter.runtime.records import Renderer, complex_events
from cepplan.engine_adapter.runtime.spec import (
    NEGATED,
    PatternSpec,
    Stages,
    compile_pattern,
)
from cepplan.engine_adapter.runtime.table import Table, make_table
from cepplan.workload.columns import EVENT_TYPE


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
    """The usable shared nodes of a job and each pattern's use of one."""

    nodes: tuple[SharedNode, ...]
    uses: Mapping[str, NodeUse]

    def groups(self) -> list[list[str]]:
        """Patterns connected through shared nodes (evaluated together per partition)."""
        members: dict[int, list[str]] = {}
        for name, use in self.uses.items():
            members.setdefault(use.node, []).append(name)
        return [names for names in members.values() if len(names) > 1]


def sharing_plan(job: Job) -> SharingPlan:
    """Read the job's `sharing` section (the plan's) into nodes each user provably equals."""
    section = job.data.get("sharing") or {}
    candidates: dict[str, list[tuple[int, int, NodeUse]]] = {}
    nodes: list[SharedNode] = []
    for index, entry in enumerate(section.get("shared", ())):
        users = {n: t for n, t in entry.get("users", {}).items() if _plannable(job, n)}
        if len(users) < 2:
            continue
        ref_name, ref_tree = next(iter(users.items()))
        ref = job.pattern(ref_name)
        leaves = _leaves(ref_tree)
        window = max(float(entry["window"]), *(job.pattern(n).window for n in users))
        spec = _sub_spec(ref, leaves, window, f"{ref_name}/shared{index}")
        node = SharedNode(len(nodes), spec, compile_pattern(spec), entry.get("cost"))
        for name, tree in users.items():
            mapping = _correspondence(ref_tree, tree, ref, job.pattern(name))
            if mapping is not None:
                candidates.setdefault(name, []).append((len(leaves), node.index,
                                                        NodeUse(node.index, mapping)))
        nodes.append(node)
    uses = {name: max(found, key=lambda c: c[0])[2] for name, found in candidates.items()}
    # a node only one pattern ended up using is no sharing: that pattern runs alone
    count = {i: sum(u.node == i for u in uses.values()) for i in range(len(nodes))}
    uses = {n: u for n, u in uses.items() if count[u.node] > 1}
    return SharingPlan(tuple(nodes), uses)


def _plannable(job: Job, name: str) -> bool:
    try:
        spec = job.pattern(name)
    except KeyError:
        return False
    return spec.operator != "OR" and spec.window is not None and \
        not any(job.is_complex(o.type) for o in spec.operands)


def _leaves(tree: Any) -> tuple[str, ...]:
    return (tree,) if isinstance(tree, str) else _leaves(tree[0]) + _leaves(tree[1])


def _sub_spec(spec: PatternSpec, leaves: Sequence[str], window: float, name: str) -> PatternSpec:
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
    theirs = sorted(json.dumps(_renamed(p.tree, mapping)) for p in ref.predicates
                    if p.variables <= inside_ref)
    return mine == theirs


def _renamed(tree: Any, mapping: Mapping[str, str]) -> Any:
    if not isinstance(tree, list) or not tree:
        return tree
    if tree[0] == "attr":
        return ["attr", mapping.get(tree[1], tree[1]), *tree[2:]]
    if tree[0] == "kleene":
        return ["kleene", tree[1], mapping.get(tree[2], tree[2]), *tree[3:]]
    return [tree[0], *(_renamed(t, mapping) for t in tree[1:])]


# -- evaluation --------------------------------------------------------------------------


@dataclass
class GroupOutput:
    """One partition of a sharing group: each pattern's output and each node's partial
    matches (computed once)."""

    outputs: dict[str, PartitionOutput] = field(default_factory=dict)
    partials: dict[int, int] = field(default_factory=dict)


class _Candidates:
    """Candidate events per (type, filters), computed once for the whole group."""

    def __init__(self) -> None:
        self.cache: dict[str, np.ndarray] = {}


def evaluate_group(frame: pd.DataFrame, job: Job, plan: SharingPlan, names: Sequence[str], *,
                   own: tuple[float, float] = (-math.inf, math.inf),
                   with_complex: Sequence[str] = (),
                   chunk_events: int = CHUNK_EVENTS, render: bool = True) -> GroupOutput:
    """Match the patterns `names` (one sharing group, same key) over one partition's events:
    one table, each shared node's partial matches once, each pattern on top of its node.
    Without `render`, only counts (benchmarks time the joins apart from the output)."""
    attributes: list[str] = []
    for name in names:
        attributes += [a for a in needed_attributes(job, job.pattern(name)) if a not in attributes]
    table = make_table(frame, attributes)
    cache = _Candidates()
    out = GroupOutput()
    node_rows: dict[int, tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]] = {}
    for index in sorted({plan.uses[n].node for n in names if n in plan.uses}):
        node = plan.nodes[index]
        rows = _node_rows(_SharedContext(table, node.spec, node.stages, cache), chunk_events)
        owned = (table.ts[rows[1]] >= own[0]) & (table.ts[rows[1]] < own[1])
        out.partials[index] = int(np.count_nonzero(owned))  # by latest event, like matches
        node_rows[index] = rows
    renderer = Renderer(table, job.types)
    for name in names:
        spec = job.pattern(name)
        use = plan.uses.get(name)
        context = _SharedContext(table, spec, job.stages[name], cache,
                                 None if use is None else (use, node_rows[use.node]))
        results = _match(context, table, own, chunk_events)
        blocks = [renderer.match_lines(spec, m) for m in results if m.count and render]
        result = PartitionOutput("".join(blocks), sum(m.count for m in results), None,
                                 sum(m.cap_hits for m in results))
        if name in with_complex and result.count and render:
            parts = [complex_events(table, spec, m, block.split("\n")[:-1])
                     for m, block in zip((m for m in results if m.count), blocks, strict=True)]
            result.complex = pd.concat(parts, ignore_index=True)
        out.outputs[name] = result
    return out


def _node_rows(context: _SharedContext, chunk_events: int):
    """All partial matches of a node over the partition, ordered by their latest event:
    (rows per variable, latest ranks, earliest timestamps)."""
    operands = context.spec.positive
    parts: list[dict[str, np.ndarray]] = []
    n = len(context.table)
    for start in range(0, n, chunk_events):
        rows = context.join(operands, start, min(n, start + chunk_events))
        if rows:
            latest = np.max(np.vstack(list(rows.values())), axis=0)
            parts.append(_filter_rows(rows, latest >= start))
    variables = [o.var for o in operands]
    rows = {v: np.concatenate([p[v] for p in parts]) if parts else np.empty(0, np.int64)
            for v in variables}
    stacked = np.vstack([rows[v] for v in variables])
    latest = stacked.max(axis=0)
    order = np.argsort(latest, kind="stable")
    rows = {v: a[order] for v, a in rows.items()}
    earliest = context.table.ts[stacked.min(axis=0)[order]] if len(order) else np.empty(0)
    return rows, latest[order], earliest


def _match(context: _Context, table: Table, own: tuple[float, float],
           chunk_events: int) -> list[Matches]:
    """`matcher.match_partition` for a SEQ/AND pattern through the given context."""
    result = Matches()
    n = len(table)
    for start in range(0, n, chunk_events):
        stop = min(n, start + chunk_events)
        if table.ts[start] < own[1] and table.ts[stop - 1] >= own[0]:
            result.extend(context.chunk(context.spec.positive, start, stop, own))
    return [result]


class _SharedContext(_Context):
    """The matcher's context with candidates shared across the group and, for a node's
    user, the join started from the node's partial matches."""

    def __init__(self, table: Table, spec: PatternSpec, stages: Stages, cache: _Candidates,
                 start_from: tuple[NodeUse, tuple] | None = None):
        self._cache = cache
        super().__init__(table, spec, stages)
        self.start_from = start_from

    def _candidates(self, operand):
        filters = (self.stages.negation_filters if operand.kind == NEGATED
                   else self.stages.filters).get(operand.var, [])
        key = json.dumps([operand.type, operand.kind == NEGATED,
                          sorted(json.dumps(_renamed(f, {operand.var: "_"})) for f in filters)])
        if key not in self._cache.cache:
            self._cache.cache[key] = super()._candidates(operand)
        return self._cache.cache[key]

    def join(self, operands, start, stop):
        if self.start_from is None:
            return super().join(operands, start, stop)
        use, (node, latest, earliest) = self.start_from
        table = self.table
        low = table.ts[start] - self.window
        first = np.searchsorted(latest, np.searchsorted(table.ts, low, "left"), "left")
        last = np.searchsorted(latest, stop, "left")
        keep = earliest[first:last] >= low
        keep &= table.ts[latest[first:last]] - earliest[first:last] <= self.window
        rows = {use.names[v]: a[first:last][keep] for v, a in node.items()}
        if not len(next(iter(rows.values()))):
            return {}
        inside = set(rows)
        last_position = max(o.position for o in operands)
        pending = [p for p in self.stages.joins if not p.variables <= inside]
        for var in [v for v in self.spec.order if v not in inside
                    and self.spec.operand(v).kind != NEGATED]:
            operand = self.spec.operand(var)
            cand = self.cands[var]
            rows = self._extend(rows, operand, cand, table.ts[cand], stop, last_position, start)
            ready = [p for p in pending if p.variables <= set(rows)]
            pending = [p for p in pending if not p.variables <= set(rows)]
            for pred in ready:
                rows = _filter_rows(rows, self._holds_on_rows(pred.tree, rows))
            if not len(rows[var]):
                return {}
        return rows


def run_group(events: pd.DataFrame, job: Job, plan: SharingPlan, name: str, *,
              with_complex: Sequence[str] = (), chunk_events: int = CHUNK_EVENTS,
              partials: dict[int, int] | None = None) -> dict[str, list[PartitionOutput]]:
    """In-process: the sharing group of pattern `name` (the users of its node) over every
    partition of `events`; per pattern its partition outputs. Adds each node's partial
    matches into `partials`."""
    node = plan.uses[name].node
    names = [n for n in (s.name for s in job.patterns) if plan.uses.get(n, None)
             and plan.uses[n].node == node]
    types = {o.type for n in names for o in job.pattern(n).operands}
    frame = events[events[EVENT_TYPE].isin(types)]
    outputs: dict[str, list[PartitionOutput]] = {n: [] for n in names}
    for group in partitions(frame, job.pattern(name).partition_by):
        result = evaluate_group(group, job, plan, names, with_complex=with_complex,
                                chunk_events=chunk_events)
        for n, out in result.outputs.items():
            outputs[n].append(out)
        if partials is not None:
            for index, count in result.partials.items():
                partials[index] = partials.get(index, 0) + count
    return outputs


def node_summaries(plan: SharingPlan, partials: Mapping[int, int], span: float) -> list[dict]:
    """metrics.json's `shared_nodes` (both engines): per node its users, the partial matches
    computed (once), and per window of the stream (`span` long) beside the plan's figure."""
    span = span or 1.0
    out = []
    for node in plan.nodes:
        users = sorted(n for n, u in plan.uses.items() if u.node == node.index)
        if len(users) < 2:
            continue
        count = partials.get(node.index, 0)
        # the model counts the partial matches alive in one window; each is created once,
        # when its latest event arrives, at k·C(S)/W per time unit (docs/sharing.md)
        size = len(node.spec.positive)
        out.append({"users": users, "window": node.spec.window, "partial_matches": count,
                    "per_window": round(count * node.spec.window / (span * size), 4),
                    "modelled_per_window": node.modelled})
    return out
