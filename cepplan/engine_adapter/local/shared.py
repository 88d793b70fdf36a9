"""The local engine's side of the shared plan: one sharing group's patterns over the rows
any of them acquires (within its context windows, with contexts), sliced once (largest
window), evaluated by `runtime.shared_plan` — over a time range of NumPy columns as the
events are read (`match_shared_range`), or over the whole pandas pool (`shared_group`)."""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from cepplan.engine_adapter.local import slices
from cepplan.engine_adapter.local.totals import PatternTotals
from cepplan.engine_adapter.runtime.acquire import acquire, acquire_in_range
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput, partitions, rendered
from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.records import ROW_COLUMN, EventTexts, Renderer
from cepplan.engine_adapter.runtime.shared_nodes import SharingPlan
from cepplan.engine_adapter.runtime.shared_plan import (
    TYPE_CODES,
    Candidates,
    GroupMatches,
    group_attributes,
    group_table,
    match_group,
    match_table,
    node_summaries,
    type_codes,
)
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Columns, Table
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

if TYPE_CHECKING:  # the time-range path runs without pandas
    import pandas as pd

    from cepplan.engine_adapter.local.contexts import LocalContexts


def match_shared_range(pool: Columns, job: Job, plan: SharingPlan, names: Sequence[str],
                       owned: tuple[float, float], inside: np.ndarray, writer: Any,
                       totals: dict[str, PatternTotals], partials: dict[int, int],
                       seconds: dict[str, float], texts: EventTexts | None = None) -> None:
    """One sharing group's matches whose latest event lies in `owned` (`inside` flags those
    rows of `pool`), written per member: each member acquires its rows once (its rows sent
    counted as when evaluated alone), the group is matched once over their union, each
    shared node's partial matches computed once and added to `partials`; `totals` gets each
    member's rows sent, matches and cap hits. `texts`: the pool's event texts (its
    `ROW_COLUMN`), shared with the other patterns' renderers. The group's table is built
    once per key and cut into `_group_slices` of it (docs/sharing.md, "What the engines do
    with it")."""
    kept: dict[str, np.ndarray] = {}
    for name in names:
        kept[name] = acquire_in_range(pool, job.pattern(name), seconds)
        totals[name].sent += int(np.count_nonzero(kept[name] & inside))
    clock = time.perf_counter()
    rows = np.flatnonzero(np.logical_or.reduce(list(kept.values())))
    wanted = {EVENT_TYPE, EVENT_TS, EVENT_ID, ROW_COLUMN, *group_attributes(job, names)}
    frame = pool.take(rows, [c for c in pool.columns if c in wanted])  # the group's columns
    frame.data.update({acquired_column(n): keep[rows] for n, keep in kept.items()})
    type_names, codes = _type_codes(pool)
    frame.data[TYPE_CODES] = codes[rows]
    flags = {n: acquired_column(n) for n in names}
    shape = _shape([job.pattern(n) for n in names])
    for part in partitions(frame, shape.partition_by):
        table = group_table(part, job, names, flags, [TYPE_CODES])
        output = _MemberOutput(table, job, names, flags, writer, totals, texts)
        candidates = Candidates(table, type_names)  # once: each slice reads its part
        for (first, last), own in _group_slices(table, shape, output.largest()):
            mine = (max(own[0], owned[0]), min(own[1], owned[1]))
            if mine[0] >= mine[1]:
                continue
            found, built = match_table(table.between(first, last), job, plan, names,
                                       own=mine, acquired=flags,
                                       candidates=candidates.between(first, last))
            for index, count in built.items():
                partials[index] = partials.get(index, 0) + count
            output.add(found, first, last, mine)
        output.flush()
    key = f"match {names[0]}"  # the group's matching, charged to its first member
    seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - clock


_POOL_TYPES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _type_codes(pool: Columns) -> tuple[list[str], np.ndarray]:
    """`type_codes` of the pool's events, computed once per pool for all its groups."""
    if pool not in _POOL_TYPES:
        _POOL_TYPES[pool] = type_codes(pool[EVENT_TYPE])
    return _POOL_TYPES[pool]


def _group_slices(table: Table, shape: SimpleNamespace, largest: int
                  ) -> Iterator[tuple[tuple[int, int], tuple[float, float]]]:
    """`slices.slices` over a group's table, as rank ranges of it: time ranges owning the
    matches whose latest event falls in them, each with the window before it (and after
    it, when a negation can look ahead), cut so that the group's largest member has about
    `SLICE_ROWS` of its own events in each, as when evaluated alone (cut by the group's
    events, a member would be matched and rendered in more, smaller pieces)."""
    rows = slices.SLICE_ROWS * len(table) // max(1, largest)
    if len(table) <= rows:
        yield (0, len(table)), (-math.inf, math.inf)
        return
    back = shape.window or 0.0
    ahead = back if shape.negated else 0.0
    for own in slices.time_ranges(table.ts, rows):
        first = int(np.searchsorted(table.ts, own[0] - back, "left"))
        last = int(np.searchsorted(table.ts, own[1] + ahead, "right"))
        yield (first, last), own


class _MemberOutput:
    """Each member's matches over a group's table, rendered and written when it has about
    `SLICE_ROWS` of its own events' matches pending (as alone: one render per slice of its
    own), not once per slice of the group."""

    def __init__(self, table: Table, job: Job, names: Sequence[str], flags: Mapping[str, str],
                 writer: Any, totals: dict[str, PatternTotals], texts: EventTexts | None):
        self.table, self.job, self.writer, self.totals, self.texts = (table, job, writer,
                                                                      totals, texts)
        self.specs = {n: job.pattern(n) for n in names}
        self.own = {n: np.asarray(table.columns[flags[n]], dtype=bool) for n in names}
        self.pending: dict[str, list[tuple[int, int, list[Matches]]]] = {n: [] for n in names}
        self.rows = dict.fromkeys(names, 0)

    def largest(self) -> int:
        """The most events of the table any member acquires."""
        return max(int(np.count_nonzero(own)) for own in self.own.values())

    def add(self, found: Mapping[str, list[Matches]], first: int, last: int,
            mine: tuple[float, float]) -> None:
        """One slice's matches (ranks of the table's [first, last)) whose latest event lies
        in `mine`; a member is rendered once its pending slices own `SLICE_ROWS` of its
        events, a member with a Kleene variable at every slice (its sets are not moved
        to the whole table's ranks)."""
        stamps = self.table.ts[first:last]
        owned = (stamps >= mine[0]) & (stamps < mine[1])
        for name, matches in found.items():
            self.pending[name].append((first, last, matches))
            self.rows[name] += int(np.count_nonzero(self.own[name][first:last] & owned))
            if self.rows[name] >= slices.SLICE_ROWS or self.specs[name].kleene_vars:
                self._write(name)

    def flush(self) -> None:
        """Every member's pending matches rendered and written."""
        for name in self.pending:
            self._write(name)

    def _write(self, name: str) -> None:
        pending, self.pending[name], self.rows[name] = self.pending[name], [], 0
        parts = [(first, last, m) for first, last, m in pending if m]
        if not parts:
            return
        if len(parts) == 1:  # one slice: rendered over its rows (smaller masks)
            first, last, matches = parts[0]
            table = self.table.between(first, last)
        else:  # several: their ranks moved to the whole table's, rendered in one call
            table = self.table
            matches = [Matches.joined([_moved(m, first) for first, _, found in parts
                                       for m in found])]
        out = rendered(Renderer(table, self.job.types, self.texts), self.specs[name], matches,
                       False)
        self.writer.write(name, out)
        total = self.totals[name]
        total.matches += out.count
        total.cap_hits += out.cap_hits
        total.held_back += out.held_back


def _moved(matches: Matches, offset: int) -> Matches:
    """Matches of a table's rows from rank `offset` on, as ranks of the table (plain
    variables only)."""
    return Matches({v: ranks + offset for v, ranks in matches.single.items()}, {},
                   matches.count, matches.cap_hits, matches.held_back)


def acquired_column(name: str) -> str:
    """The group frame's column flagging the rows pattern `name` acquires (a leading tab:
    no attribute or variable tag is named so)."""
    return "\tacquired\t" + name


def _shape(specs: Sequence[PatternSpec]) -> SimpleNamespace:
    """What slicing a group's events needs: the largest window, every member's negations
    (a slice reaches ahead when any can look ahead) and the common key; a time window, as a
    pattern with a count window shares with none."""
    return SimpleNamespace(window=max(s.window for s in specs),
                           negated=tuple(o for s in specs for o in s.negated),
                           partition_by=specs[0].partition_by, window_events=None)


def shared_group(pool: pd.DataFrame, job: Job, plan: SharingPlan, name: str,
                 consumers: Collection[str], partials: dict[int, int],
                 stage: LocalContexts | None,
                 slices: Callable) -> dict[str, Iterator[PartitionOutput]]:
    """Outputs of the sharing group of pattern `name` (docs/matching.md, "The shared plan"): per
    member the rows it acquires (within its context windows, with contexts: the context
    stage then keeps the matches that count, as for a pattern evaluated alone)."""
    members = set(plan.members(name))
    names = [s.name for s in job.patterns if s.name in members]
    kept: dict[str, np.ndarray] = {}
    for member in names:
        spec = job.pattern(member)
        labels = [c for c in pool.columns if c.startswith(member + "\t")]
        frame, masks = pool, {c: pool[c].to_numpy(dtype=bool) for c in labels}
        if stage is not None:
            frame, masks = stage.push_down(pool, masks, spec)
        kept[member] = np.zeros(len(pool), dtype=bool)
        kept[member][pool.index.get_indexer(frame.index[acquire(frame, masks, spec)])] = True
    return run_shared_group(pool, kept, job, plan, names,
                            with_complex=consumers, partials=partials, slices=slices)


def run_shared_group(pool: pd.DataFrame, kept: Mapping[str, np.ndarray], job: Job,
                     plan: SharingPlan, names: list[str], *, with_complex: Collection[str],
                     partials: dict[int, int],
                     slices: Callable) -> dict[str, Iterator[PartitionOutput]]:
    """Per member, its outputs slice by slice, each rendered when taken (so the group's
    text is not all held at once); each node's partial matches added to
    `partials`. `kept` flags, per member, the pool's rows it acquires; `slices` is the
    engine's split into owned time ranges per key."""
    rows = np.logical_or.reduce([kept[n] for n in names])
    frame = pool.loc[rows, [c for c in pool.columns if "\t" not in c]]
    frame = frame.assign(**{acquired_column(n): kept[n][rows] for n in names})
    flags = {n: acquired_column(n) for n in names}
    found: list[GroupMatches] = []
    for group, own in slices(frame, _shape([job.pattern(n) for n in names])):
        found.append(match_group(group, job, plan, names, own=own, acquired=flags))
        for index, count in found[-1].partials.items():
            partials[index] = partials.get(index, 0) + count
    return {n: _rendered(found, n, n in with_complex) for n in names}


def _rendered(found: list[GroupMatches], name: str,
              with_complex: bool) -> Iterator[PartitionOutput]:
    """One member's outputs, slice by slice, each rendered as it is taken."""
    for part in found:
        yield part.output(name, with_complex)


def node_metrics(job: Job, plan: SharingPlan, partials: Mapping[int, int],
                 pool: pd.DataFrame) -> list[dict]:
    """metrics.json's `shared_nodes` over the tagged rows' time span (`node_summaries`)."""
    ts = pool[EVENT_TS].to_numpy(dtype=np.float64) if len(pool) else np.zeros(1)
    return node_summaries(plan, partials, float(ts.max() - ts.min()))
