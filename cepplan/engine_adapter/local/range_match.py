"""One time range of tagged rows matched (docs/matching.md): what every way the in-process
engine runs shares — a whole file, time ranges in workers, byte ranges read by each process,
a live stream — the rows read and tagged, then each pattern's matches whose latest event lies
in the range, over the range and its margin."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from cepplan.engine_adapter.local.partial_counts import added
from cepplan.engine_adapter.local.range_skip import skipping
from cepplan.engine_adapter.local.slices import slices
from cepplan.engine_adapter.local.totals import PatternTotals
from cepplan.engine_adapter.runtime.acquire import acquire_in_range
from cepplan.engine_adapter.runtime.job import Job, evaluate_pieces, zoned_times
from cepplan.engine_adapter.runtime.records import MATCH_COLUMN, ROW_COLUMN, EventTexts
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.engine_adapter.runtime.tagging import tag_masks
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, EVENT_ZONE

if TYPE_CHECKING:
    import pandas as pd

    from cepplan.engine_adapter.runtime.shared_nodes import SharingPlan

EMPTY_POOL_COLUMNS = [EVENT_TYPE, EVENT_TS, EVENT_ID]  # the columns of a pool without events


def window_margin(job: Job) -> float:
    """How far around a time range the events must be at hand to match it exactly: a window
    for the matches' events (either side, for negations looking ahead) and a window per
    acquisition step for the semi-joins deciding which of those events the matchers get."""
    return max((len(p.steps) + 2) * (p.window or 0.0) for p in job.patterns)


def match_range(pool: Columns, job: Job, owned: tuple[float, float], writer: Any,
                 totals: dict[str, PatternTotals], built: dict[str, list[int]],
                 seconds: dict[str, float], sharing: SharingPlan | None = None,
                 partials: dict[int, int] | None = None) -> None:
    """Every pattern's matches whose latest event lies in `owned`, over `pool` (the events
    of that range and a margin around it), written; rows sent and partial matches built
    counted for the range. A sharing group is matched together (`match_shared_range`),
    its nodes' partial matches added to `partials`."""
    if not len(pool):
        return
    texts = EventTexts(len(pool))  # each event rendered once for every pattern
    pool = Columns({**pool.data, ROW_COLUMN: np.arange(len(pool))}, pool.codes, pool.types)
    stamps = pool[EVENT_TS]
    inside = (stamps >= owned[0]) & (stamps < owned[1])
    done: set[str] = set()
    with skipping(writer) as writer:  # a skip applied to the range's matches
        for spec in job.patterns:
            if spec.name in done:
                continue
            if sharing is not None and spec.name in sharing.uses:
                from cepplan.engine_adapter.local.shared import match_shared_range

                names = sharing.members(spec.name)
                match_shared_range(pool, job, sharing, names, owned, inside, writer, totals,
                                   partials, seconds, texts)
                done.update(names)
                continue
            keep = acquire_in_range(pool, spec, seconds)
            frame = pool.take(keep, [c for c in pool.columns if "\t" not in c])
            clock = time.perf_counter()
            total = totals[spec.name]
            total.sent += int(np.count_nonzero(keep & inside))
            for group, own in slices(frame, spec):
                mine = (max(own[0], owned[0]), min(own[1], owned[1]))
                if mine[0] >= mine[1]:
                    continue
                for result in evaluate_pieces(group, job, spec, own=mine, texts=texts):
                    writer.write(spec.name, result)
                    total.add_output(result)
                    built[spec.name] = added(built.get(spec.name, []), result.partials)
            seconds[f"match {spec.name}"] = (seconds.get(f"match {spec.name}", 0.0)
                                             + time.perf_counter() - clock)


def wanted_columns(job: Job) -> list[str]:
    columns = [EVENT_TYPE, EVENT_TS, EVENT_ID]
    for spec in job.patterns:
        for operand in spec.operands:
            columns += job.types.get(operand.type, ())
        columns += spec.partition_by
    columns += [EVENT_ZONE] if zoned_times(job.data) else []
    return [c for c in dict.fromkeys(columns) if c != MATCH_COLUMN]


def tagged_rows(frame: pd.DataFrame | Columns, job: Job, wanted: list[str] | None = None,
                every: bool = False) -> pd.DataFrame | Columns:
    """The rows of `frame` some variable can bind (`every`: all rows, as a live stream
    holds them to number count windows' positions), with a boolean column per tag."""
    masks = tag_masks(frame, job)
    any_tag = np.logical_or.reduce(list(masks.values())) if masks else np.zeros(len(frame), bool)
    if every:
        any_tag = np.ones(len(frame), dtype=bool)
    columns = [c for c in (wanted or frame.columns) if c in frame.columns]
    if isinstance(frame, Columns):
        out = frame.take(any_tag, columns)
        out.data.update({label: mask[any_tag] for label, mask in masks.items()})
        return out
    import pandas as pd

    out = frame.loc[any_tag, columns].reset_index(drop=True)
    tags = pd.DataFrame({label: mask[any_tag] for label, mask in masks.items()})
    return pd.concat([out, tags], axis=1) if len(tags.columns) else out
