"""Each event's position among its partition's events, the clock of count windows
(`"within": "N events"`, docs/workload-format.md): every event read (of any declared type)
that has the partition's attributes counts, numbered from 0 in the total order (timestamp,
then id). A count-window pattern's matcher checks its window on this column instead of
the timestamps: the first and last events of a match lie at most N positions apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.workload.columns import EVENT_ID, EVENT_TS

if TYPE_CHECKING:
    import pandas as pd

PREFIX = "__position:"  # not an attribute name: attributes are identifiers


def position_column(keys: Sequence[str]) -> str:
    """The column holding each event's position in its partition (`keys`: the partition's
    attributes; none: the whole input is one partition)."""
    return PREFIX + ",".join(keys)


def counted_keys(patterns: Sequence[PatternSpec]) -> list[tuple[str, ...]]:
    """The partitionings whose positions the count-window patterns read, each once."""
    return list(dict.fromkeys(p.partition_by for p in patterns if p.window_events))


class PositionCounter:
    """Sees every batch of good rows as read (any order), then numbers the positions of
    each partitioning's events and stamps them on the rows the matchers read."""

    def __init__(self, keyings: Sequence[tuple[str, ...]]):
        self.keyings = list(keyings)
        self.seen: list[pd.DataFrame] = []

    def observe(self, batch: pd.DataFrame) -> None:
        """Keep what orders the batch's events: their keys, timestamps and ids."""
        wanted = list(dict.fromkeys([k for keys in self.keyings for k in keys]))
        columns = [EVENT_TS, EVENT_ID, *[k for k in wanted if k in batch.columns]]
        self.seen.append(batch[columns].reset_index(drop=True))

    def time_spans(self, patterns: Sequence[PatternSpec]) -> dict[str, float]:
        """Per count-window pattern, the time its window's positions took on average over
        the input read: N × its time span / the events its partitions counted."""
        import pandas as pd

        if not self.seen:
            return {}
        events = pd.concat(self.seen, ignore_index=True)
        stamps = events[EVENT_TS]
        span = float(stamps.max() - stamps.min()) if len(events) else 0.0
        out = {}
        for spec in (p for p in patterns if p.window_events):
            keys = list(spec.partition_by)
            counted = len(events.dropna(subset=keys)) if set(keys) <= set(events.columns) \
                else 0
            out[spec.name] = spec.window_events * span / counted if counted else 0.0
        return out

    def stamp(self, pool: pd.DataFrame) -> pd.DataFrame:
        """`pool` with one position column per partitioning (NaN: a key value missing)."""
        import pandas as pd

        if not self.seen:
            return pool
        events = pd.concat(self.seen, ignore_index=True)
        for keys in self.keyings:
            pool = pool.assign(**{position_column(keys): _positions(events, pool, list(keys))})
        return pool


def with_positions(events: pd.DataFrame, patterns: Sequence[PatternSpec]) -> pd.DataFrame:
    """`events` (all of the input, read) stamped with the positions the count-window
    `patterns` read; unchanged when none has a count window."""
    counter = PositionCounter(counted_keys(patterns))
    if not counter.keyings:
        return events
    counter.observe(events)
    return counter.stamp(events)


def _positions(events: pd.DataFrame, pool: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Each pool row's position among the events of its partition (module doc)."""
    missing = [k for k in keys if k not in events.columns or k not in pool.columns]
    if missing:
        return np.full(len(pool), np.nan)
    order = [*keys, EVENT_TS, EVENT_ID]
    counted = events.dropna(subset=keys).drop_duplicates(order).sort_values(order, kind="stable")
    counted = counted.assign(__at=(counted.groupby(keys, sort=False).cumcount()
                                   if keys else np.arange(len(counted))))
    found = pool[order].reset_index(drop=True).merge(counted[[*order, "__at"]], on=order,
                                                     how="left")
    return found["__at"].to_numpy(dtype=np.float64)
