"""The local engine's side of the shared plan: one sharing group's patterns over the rows
any of them acquires (within its context windows, with contexts), sliced once (largest
window), evaluated by `runtime.shared_plan` — over a time range of NumPy columns as the
events are read (`match_shared_range`), or over the whole pandas pool (`shared_group`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from cepplan.engine_adapter.local.acquire import acquire, acquire_in_range
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput
from cepplan.engine_adapter.runtime.records import EventTexts
from cepplan.engine_adapter.runtime.shared_plan import (
    GroupMatches,
    SharingPlan,
    match_group,
    node_summaries,
)
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.workload.columns import EVENT_TS

if TYPE_CHECKING:  # the time-range path runs without pandas
    import pandas as pd

    from cepplan.engine_adapter.local.contexts import LocalContexts


def match_shared_range(pool: Columns, job: Job, plan: SharingPlan, names: Sequence[str],
                       owned: tuple[float, float], inside: np.ndarray, writer: Any,
                       totals: dict[str, list[int]], partials: dict[int, int],
                       seconds: dict[str, float], slices: Callable,
                       texts: EventTexts | None = None) -> None:
    """One sharing group's matches whose latest event lies in `owned` (`inside` flags those
    rows of `pool`), written per member: each member acquires its rows once (its rows sent
    counted as when evaluated alone), the group is matched once over their union, each
    shared node's partial matches computed once and added to `partials`; `totals` gets each
    member's rows sent, matches and cap hits. `texts`: the pool's event texts (its
    `ROW_COLUMN`), shared with the other patterns' renderers."""
    kept: dict[str, np.ndarray] = {}
    for name in names:
        kept[name] = acquire_in_range(pool, job.pattern(name), seconds)
        totals[name][0] += int(np.count_nonzero(kept[name] & inside))
    clock = time.perf_counter()
    rows = np.logical_or.reduce(list(kept.values()))
    frame = pool.take(rows, [c for c in pool.columns if "\t" not in c])
    frame.data.update({acquired_column(n): keep[rows] for n, keep in kept.items()})
    flags = {n: acquired_column(n) for n in names}
    for group, own in slices(frame, _shape([job.pattern(n) for n in names])):
        mine = (max(own[0], owned[0]), min(own[1], owned[1]))
        if mine[0] >= mine[1]:
            continue
        found = match_group(group, job, plan, names, own=mine, acquired=flags,
                            texts=texts)
        for index, count in found.partials.items():
            partials[index] = partials.get(index, 0) + count
        for name in names:
            out = found.output(name, False)
            writer.write(name, out.matches, out.count)
            totals[name][1] += out.count
            totals[name][2] += out.cap_hits
    key = f"match {names[0]}"  # the group's matching, charged to its first member
    seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - clock


def acquired_column(name: str) -> str:
    """The group frame's column flagging the rows pattern `name` acquires (a leading tab:
    no attribute or variable tag is named so)."""
    return "\tacquired\t" + name


def _shape(specs: Sequence[PatternSpec]) -> SimpleNamespace:
    """What slicing a group's events needs: the largest window, every member's negations
    (a slice reaches ahead when any can look ahead) and the common key."""
    return SimpleNamespace(window=max(s.window for s in specs),
                           negated=tuple(o for s in specs for o in s.negated),
                           partition_by=specs[0].partition_by)


def shared_group(pool: pd.DataFrame, job: Job, plan: SharingPlan, name: str,
                 consumers: Collection[str], partials: dict[int, int],
                 stage: LocalContexts | None,
                 slices: Callable) -> dict[str, Iterator[PartitionOutput]]:
    """Outputs of the sharing group of pattern `name` (docs/engine.md, "Shared plan"): per
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
