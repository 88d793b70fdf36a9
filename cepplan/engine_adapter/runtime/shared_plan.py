"""A sharing group of patterns over one partition evaluated as a shared plan (seed 004 §3.1, §5).

Per partition each shared node's partial matches (its events joined by the node's conditions,
in the node's window, the largest of its users') are computed ONCE; every user then starts its
join from them: only rows within its own window are kept, its remaining variables are joined
on top in the order `user_order` chose for it once per job (one by one, or a subtree of its
plan tree built whole), and its own Kleene expansion and negation follow (`matcher.MatchContext`).
A user whose own order builds fewer rows than going on from the node does not share. Which
nodes each user provably equals is read once per job by `shared_nodes`; a user with several
nodes goes on with each other node's partial matches as one more operand
(`_SharedContext.join_node`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepplan.engine_adapter.runtime.job import (
    Job,
    PartitionOutput,
    needed_attributes,
    partitions,
    rendered,
)
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS, MatchContext, filter_rows, passing
from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.records import EventTexts, Renderer, with_rows
from cepplan.engine_adapter.runtime.shared_nodes import (
    NodeUse,
    SharingPlan,
    renamed_tree,
    sub_spec,
)
from cepplan.engine_adapter.runtime.spec import (
    NEGATED,
    PatternSpec,
    Stages,
    compile_pattern,
)
from cepplan.engine_adapter.runtime.table import Columns, Table, make_table
from cepplan.engine_adapter.runtime.user_order import Step
from cepplan.workload.columns import EVENT_TYPE

if TYPE_CHECKING:  # the local engine's time-range path runs shared groups without pandas
    import pandas as pd


# -- evaluation --------------------------------------------------------------------------


@dataclass
class GroupOutput:
    """One partition of a sharing group: each pattern's output and each node's partial
    matches (computed once)."""

    outputs: dict[str, PartitionOutput] = field(default_factory=dict)
    partials: dict[int, int] = field(default_factory=dict)


@dataclass
class GroupMatches:
    """One partition of a sharing group matched, not yet rendered: per pattern its matches,
    rendered by `output` when wanted (the local engine renders and writes one pattern at a
    time, so that the group's rendered text is never all held at once)."""

    renderer: Renderer
    specs: dict[str, PatternSpec]
    matches: dict[str, list[Matches]] = field(default_factory=dict)
    partials: dict[int, int] = field(default_factory=dict)

    def output(self, name: str, with_complex: bool) -> PartitionOutput:
        """Pattern `name`'s matches rendered (and as complex events when asked)."""
        return rendered(self.renderer, self.specs[name], self.matches[name], with_complex)

    def counts(self, name: str) -> PartitionOutput:
        """Pattern `name`'s counts only."""
        found = self.matches[name]
        return PartitionOutput("", sum(m.count for m in found), None,
                               sum(m.cap_hits for m in found),
                               held_back=sum(m.held_back for m in found))


TYPE_CODES = "\ttype code"  # a group frame's column: each event's type as a code


def type_codes(types: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The distinct type names of `types`, sorted, and each event's position in them
    (hashed by Arrow, then the few names sorted: the codes order events as their types'
    names do, so `make_table` can sort by them)."""
    encoded = pc.dictionary_encode(pa.array(types, pa.string()))
    names = encoded.dictionary.to_pylist()
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int32)
    rank[order] = np.arange(len(names), dtype=np.int32)
    return [names[i] for i in order], rank[encoded.indices.to_numpy(zero_copy_only=False)]


class Candidates:
    """Candidate events per (type, filters), and each type's events, computed once over a
    group's whole table (it holds every member's types) and read by every node and member,
    and by every slice of the table (`between`) as views."""

    def __init__(self, table: Table, type_names: Sequence[str] | None = None) -> None:
        """`type_names`: when given, the table's `TYPE_CODES` column holds each event's
        type as a position in them (computed once per pool instead of per table)."""
        self.table = table
        self.cache: dict[str, np.ndarray] = {}
        # (id of a pattern's stages, variable, kind) -> (the stages, the cache key)
        self.keys: dict[tuple[int, str, str], tuple[Stages, str]] = {}
        if type_names is None:
            names, codes = type_codes(table.types)
        else:
            names, codes = list(type_names), table.columns[TYPE_CODES]
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
        self.types = {name: order[bounds[i]:bounds[i + 1]] for i, name in enumerate(names)}

    def passing(self, key: str, type_name: str, filters: list) -> np.ndarray:
        """The ranks of the events of `type_name` passing `filters` (`key` names both)."""
        if key not in self.cache:
            self.cache[key] = passing(self.table, self.of_type(type_name), filters)
        return self.cache[key]

    def of_type(self, type_name: str) -> np.ndarray:
        """The ranks of the table's events of one type."""
        return self.types.get(type_name, np.empty(0, np.int64))

    def between(self, first: int, last: int) -> Candidates:
        """The candidates of the table's ranks [first, last), as ranks of `table.between`."""
        return _SliceCandidates(self, first, last)


class _SliceCandidates(Candidates):
    """A slice's candidates: the whole table's, cut to the slice's ranks and moved."""

    def __init__(self, whole: Candidates, first: int, last: int) -> None:
        self.whole, self.first, self.last = whole, first, last
        self.cache, self.keys = {}, whole.keys
        self.types = {}

    def passing(self, key: str, type_name: str, filters: list) -> np.ndarray:
        if key not in self.cache:
            self.cache[key] = self._cut(self.whole.passing(key, type_name, filters))
        return self.cache[key]

    def of_type(self, type_name: str) -> np.ndarray:
        if type_name not in self.types:
            self.types[type_name] = self._cut(self.whole.of_type(type_name))
        return self.types[type_name]

    def _cut(self, ranks: np.ndarray) -> np.ndarray:
        low, high = np.searchsorted(ranks, (self.first, self.last))
        return ranks[low:high] - self.first


def evaluate_group(frame: pd.DataFrame | Columns, job: Job, plan: SharingPlan,
                   names: Sequence[str], *, own: tuple[float, float] = (-math.inf, math.inf),
                   with_complex: Sequence[str] = (),
                   chunk_events: int = CHUNK_EVENTS, render: bool = True,
                   acquired: Mapping[str, str] | None = None) -> GroupOutput:
    """Match the patterns `names` (one sharing group, same key) over one partition's events
    and render every pattern's output (`match_group`). Without `render`, only counts
    (benchmarks time the joins apart from the output)."""
    found = match_group(frame, job, plan, names, own=own, chunk_events=chunk_events,
                        acquired=acquired)
    outputs = {name: found.output(name, name in with_complex) if render else found.counts(name)
               for name in names}
    return GroupOutput(outputs, found.partials)


def match_group(frame: pd.DataFrame | Columns, job: Job, plan: SharingPlan,
                names: Sequence[str], *, own: tuple[float, float] = (-math.inf, math.inf),
                chunk_events: int = CHUNK_EVENTS,
                acquired: Mapping[str, str] | None = None,
                texts: EventTexts | None = None) -> GroupMatches:
    """Match the patterns `names` (one sharing group, same key) over one partition's events:
    one table (`group_table`), matched by `match_table`, rendered by `GroupMatches.output`.
    `texts`: the event texts of the pool the frame was taken from, if shared."""
    table = group_table(frame, job, names, acquired)
    out = GroupMatches(Renderer(table, job.types, texts), {n: job.pattern(n) for n in names})
    out.matches, out.partials = match_table(table, job, plan, names, own=own,
                                            chunk_events=chunk_events, acquired=acquired)
    return out


def group_table(frame: pd.DataFrame | Columns, job: Job, names: Sequence[str],
                acquired: Mapping[str, str] | None = None, more: Sequence[str] = ()) -> Table:
    """One partition of a sharing group as one table: every member's attributes, the
    `acquired` flag columns and the columns `more` (and the pool rows, when the frame has
    them)."""
    attributes = group_attributes(job, names)
    attributes += [c for c in [*(acquired or {}).values(), *more] if c not in attributes]
    return make_table(frame, with_rows(frame, attributes),
                      type_order=TYPE_CODES if TYPE_CODES in more else None)


def group_attributes(job: Job, names: Sequence[str]) -> list[str]:
    """The attribute columns the members `names` of a sharing group read or output."""
    attributes: list[str] = []
    for name in names:
        attributes += [a for a in needed_attributes(job, job.pattern(name))
                       if a not in attributes]
    return attributes


def match_table(table: Table, job: Job, plan: SharingPlan, names: Sequence[str], *,
                own: tuple[float, float] = (-math.inf, math.inf),
                chunk_events: int = CHUNK_EVENTS,
                acquired: Mapping[str, str] | None = None,
                candidates: Candidates | None = None
                ) -> tuple[dict[str, list[Matches]], dict[int, int]]:
    """Per pattern of `names` its matches over `table` (a `group_table`, or rows of one)
    whose latest event lies in `own`, and each shared node's partial matches there: each
    node's computed once, each pattern on top of its nodes. `acquired` names, per member,
    the table's column flagging the rows the engine's acquisition keeps for it: its
    variables then bind only those, as in its own table when evaluated alone, and a node's
    only its users' (same matches, fewer partial ones). `candidates`: the table's, when
    it is a slice of a larger table whose candidates are computed once (`Candidates`)."""
    specs = {name: job.pattern(name) for name in names}
    mine = {n: np.asarray(table.columns[c], dtype=bool) for n, c in (acquired or {}).items()}
    cache = candidates or Candidates(table)
    partials: dict[int, int] = {}
    node_rows: dict[int, NodeRows] = {}
    for index in sorted({u.node for n in names for u in plan.uses.get(n, ())}):
        node = plan.nodes[index]
        users = [n for n in plan.users(index) if n in specs]
        allowed = (np.logical_or.reduce([mine[n] for n in users])
                   if all(n in mine for n in users) else None)
        context = _SharedContext(table, node.spec, node.stages, cache, allowed=allowed)
        rows = _node_rows(context, _chunk(context, chunk_events))
        stamps = table.ts[rows.latest]
        partials[index] = int(np.count_nonzero((stamps >= own[0]) & (stamps < own[1])))
        node_rows[index] = rows  # counted by latest event, like matches
    matches: dict[str, list[Matches]] = {}
    for name, spec in specs.items():
        starts = [(use, node_rows[use.node]) for use in plan.uses.get(name, ())]
        join = plan.joins.get(name)
        steps = join.steps if join else ()
        for step in steps:
            if len(step) > 1 and not any(set(step) == set(u.names.values()) for u, _ in starts):
                starts.append(_built_whole(table, spec, step, cache, mine.get(name),
                                           chunk_events))
        context = _SharedContext(table, spec, job.stages[name], cache, starts,
                                 allowed=mine.get(name), steps=steps)
        context.span = job.span
        matches[name] = [m for m in _match(context, table, own, _chunk(context, chunk_events))
                         if m.count or m.held_back]
    return matches, partials


def _built_whole(table: Table, spec: PatternSpec, step: Step, cache: Candidates,
                 allowed: np.ndarray | None, chunk_events: int) -> tuple[NodeUse, NodeRows]:
    """A subtree of a user's plan tree evaluated on its own (its variables in the step's
    order, its conditions applied) over the partition, to be joined whole like a node."""
    sub = sub_spec(spec, step, spec.window, f"{spec.name}/whole")
    context = _SharedContext(table, sub, compile_pattern(sub), cache, allowed=allowed)
    return NodeUse(-1, {v: v for v in step}), _node_rows(context, _chunk(context, chunk_events))


def _chunk(context: MatchContext, chunk_events: int) -> int:
    """Ranks per chunk such that a chunk holds about `chunk_events` of the pattern's own
    candidate events, as its own table would alone: the group's table holds every member's
    events, and each chunk builds again the partial matches reaching a window back."""
    n = len(context.table)
    used = np.zeros(n, dtype=bool)
    for ranks in context.cands.values():
        used[ranks] = True
    return max(chunk_events, chunk_events * n // max(1, int(np.count_nonzero(used))))


@dataclass(frozen=True)
class NodeRows:
    """A node's partial matches over a partition, ordered by their latest event: the ranks
    per variable, the latest ranks and the earliest timestamps."""

    ranks: dict[str, np.ndarray]
    latest: np.ndarray
    earliest: np.ndarray
    window: float  # the node's: the largest of its users'

    def between(self, first: int, last: int, keep: np.ndarray | None = None,
                names: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
        """The ranks of partial matches [first, last) (those of `keep` among them), under
        the user's variable names."""
        names = names or {}
        return {names.get(v, v): (a[first:last] if keep is None else a[first:last][keep])
                for v, a in self.ranks.items()}


def _node_rows(context: _SharedContext, chunk_events: int) -> NodeRows:
    """All partial matches of a node over the partition, ordered by their latest event."""
    operands = context.spec.positive
    parts: list[dict[str, np.ndarray]] = []
    n = len(context.table)
    for start in range(0, n, chunk_events):
        rows = context.join(operands, start, min(n, start + chunk_events))
        if rows:
            latest = np.max(np.vstack(list(rows.values())), axis=0)
            parts.append(filter_rows(rows, latest >= start))
    variables = [o.var for o in operands]
    rows = {v: np.concatenate([p[v] for p in parts]) if parts else np.empty(0, np.int64)
            for v in variables}
    stacked = np.vstack([rows[v] for v in variables])
    latest = stacked.max(axis=0)
    order = np.argsort(latest, kind="stable")
    rows = {v: a[order] for v, a in rows.items()}
    earliest = context.table.ts[stacked.min(axis=0)[order]] if len(order) else np.empty(0)
    return NodeRows(rows, latest[order], earliest, context.window)


def _match(context: MatchContext, table: Table, own: tuple[float, float],
           chunk_events: int) -> list[Matches]:
    """`matcher.match_partition` for a SEQ/AND pattern through the given context."""
    pieces = []
    n = len(table)
    for start in range(0, n, chunk_events):
        stop = min(n, start + chunk_events)
        if table.ts[start] < own[1] and table.ts[stop - 1] >= own[0]:
            pieces.extend(context.chunk(context.spec.positive, start, stop, own))
    return [Matches.joined(pieces)]


class _SharedContext(MatchContext):
    """The matcher's context with candidates shared across the group and, for a node's
    user, the join started from its largest node's partial matches and going on by its
    `steps`: a variable, or another node's (or a subtree's built whole) partial matches
    joined in as one operand."""

    def __init__(self, table: Table, spec: PatternSpec, stages: Stages, cache: Candidates,
                 starts: Sequence[tuple[NodeUse, NodeRows]] = (),
                 allowed: np.ndarray | None = None, steps: Sequence[Step] = ()):
        self._cache = cache
        self._allowed = allowed  # the ranks this pattern (or node) may bind, if not all
        super().__init__(table, spec, stages)
        # its joins go by nodes: negations after them (its tables carry no stamps)
        self.gaps, self.adjacent, self.gapped = {}, {}, set()
        self.starts = list(starts)
        self.steps = list(steps) or [(v,) for v in spec.order]

    def _candidates(self, operand):
        filters = (self.stages.negation_filters if operand.kind == NEGATED
                   else self.stages.filters).get(operand.var, [])
        name = (id(self.stages), operand.var, operand.kind)
        if name not in self._cache.keys:  # the stages held, so that their id stays theirs
            self._cache.keys[name] = (self.stages, json.dumps(
                [operand.type, operand.kind == NEGATED,
                 sorted(json.dumps(renamed_tree(f, {operand.var: "_"})) for f in filters)]))
        ranks = self._cache.passing(self._cache.keys[name][1], operand.type, filters)
        return ranks if self._allowed is None else ranks[self._allowed[ranks]]

    def _of_type(self, type_name: str) -> np.ndarray:
        return self._cache.of_type(type_name)

    def join_pieces(self, operands, start, stop):
        """The matcher's pieces, or, joined from nodes' partial matches, all rows at once."""
        if not self.starts:
            yield from super().join_pieces(operands, start, stop)
        elif rows := self.join(operands, start, stop):
            yield rows

    def join(self, operands, start, stop):
        if not self.starts:
            return super().join(operands, start, stop)
        (use, node), later = self.starts[0], self.starts[1:]
        table = self.table
        low = table.ts[start] - self.window
        first = np.searchsorted(node.latest, np.searchsorted(table.ts, low, "left"), "left")
        last = np.searchsorted(node.latest, stop, "left")
        keep = None  # the node's own rows (views, no copy) when its window is this pattern's
        if self.window < node.window:
            earliest = node.earliest[first:last]
            keep = table.ts[node.latest[first:last]] - earliest <= self.window
        rows = node.between(first, last, keep, use.names)
        if not len(next(iter(rows.values()))):
            return {}
        joined = {frozenset(u.names.values()): (u, n) for u, n in later}
        pending = [p for p in self.stages.joins if not p.variables <= set(rows)]
        last_position = max(o.position for o in operands)
        for step in self.steps:
            if step[0] in rows or self.spec.operand(step[0]).kind == NEGATED:
                continue
            if len(step) > 1:
                use, part = joined[frozenset(step)]
                rows = self.join_node(rows, use, part, stop)
                pending = [p for p in pending if not p.variables <= set(step)]  # hold inside
            else:
                cand = self.cands[step[0]]
                rows = self._extend(rows, self.spec.operand(step[0]), cand, table.ts[cand],
                                    stop, last_position, start, pending)
            ready = [p for p in pending if p.variables <= set(rows)]
            pending = [p for p in pending if not p.variables <= set(rows)]
            for pred in ready:
                rows = filter_rows(rows, self._holds_on_rows(pred.tree, rows))
            if not len(rows[step[0]]):
                return {}
        return rows

    def join_node(self, rows: dict[str, np.ndarray], use: NodeUse, node: NodeRows,
                  stop: int) -> dict[str, np.ndarray]:
        """Join a node's partial matches (latest event before rank `stop`) to the rows as one
        operand: within the window together, in SEQ order with every bound variable, and on
        distinct events where types are equal. The conditions across are left to the
        caller, as for a variable."""
        table = self.table
        stamps = np.vstack([table.ts[a] for a in rows.values()])
        latest_ts, earliest_ts = stamps.max(axis=0), stamps.min(axis=0)
        node_ts = table.ts[node.latest]
        low = np.searchsorted(node_ts, latest_ts - self.window, "left")
        high = np.minimum(np.searchsorted(node_ts, earliest_ts + self.window, "right"),
                          np.searchsorted(node.latest, stop, "left"))
        if self.seq:  # the node's latest event lies after the bound events before it in
            # the sequence and before those after it: searched, not expanded and dropped
            last = max(self.spec.operand(use.names[v]).position for v in node.ranks)
            low, high = self._order_bounds(
                low, high, node.latest, node_ts,
                [a for v, a in rows.items() if self.spec.operand(v).position < last],
                [a for v, a in rows.items() if self.spec.operand(v).position > last])
        which, positions = self.expand(low, high, len(rows) + len(node.ranks))
        keep = (node.earliest[positions] >= latest_ts[which] - self.window) & \
            (node_ts[positions] - node.earliest[positions] <= self.window)
        added = {use.names[v]: a[positions] for v, a in node.ranks.items()}
        for var, ranks in added.items():
            mine = self.spec.operand(var)
            for other, bound in rows.items():
                theirs = self.spec.operand(other)
                if mine.type == theirs.type:
                    keep &= ranks != bound[which]
                if self.seq:
                    keep &= self._in_order(bound[which], theirs.position, ranks, mine.position)
        rows = {v: a[which[keep]] for v, a in rows.items()}
        rows.update({v: a[keep] for v, a in added.items()})
        return rows

    def _in_order(self, a: np.ndarray, a_position: int, b: np.ndarray,
                  b_position: int) -> np.ndarray:
        """Whether events `a` and `b` lie in their SEQ positions' order (strictly later
        timestamps, or with ties allowed not earlier)."""
        if a_position > b_position:
            a, b = b, a
        ts = self.table.ts
        return ts[a] < ts[b] if self.strict else ts[a] <= ts[b]


def run_group(events: pd.DataFrame, job: Job, plan: SharingPlan, name: str, *,
              with_complex: Sequence[str] = (), chunk_events: int = CHUNK_EVENTS,
              partials: dict[int, int] | None = None) -> dict[str, list[PartitionOutput]]:
    """In-process: the sharing group of pattern `name` over every partition of `events`;
    per pattern its partition outputs. Adds each node's partial matches into `partials`."""
    names = plan.members(name)
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
        users = plan.users(node.index)
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
