"""Count windows' clock on a live stream (`runtime.positions`): each partition's running
position, carried from micro-batch to micro-batch and in the checkpoint.

An event's position is decided once the watermark passes it: no event before it in (ts, id)
order can arrive later (it would be late, never matched nor counted). So the stream holds
every event read above the watermark (those no variable binds too, for counting only), and
when the watermark moves from w0 to w1 numbers the events in [w0, w1) per partition from
where the partition stopped, as the batch run numbers them over the whole input. Of the
events below the watermark it keeps those a later match may reach back to: the last N
positions of each partition (N: the widest count window over that partitioning).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cepplan.engine_adapter.runtime.positions import counted_keys, position_column
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Columns, key_codes
from cepplan.workload.columns import EVENT_ID, EVENT_TS

Key = tuple  # a partition's key values


class StreamPositions:
    """Per partitioning the count-window patterns read, each partition's next position."""

    def __init__(self, patterns: Sequence[PatternSpec]):
        self.keyings = counted_keys(patterns)
        self.reach = {keys: max(p.window_events for p in patterns
                                if p.window_events and p.partition_by == keys)
                      for keys in self.keyings}
        self.next: dict[tuple[str, ...], dict[Key, int]] = {k: {} for k in self.keyings}
        self.counted = dict.fromkeys(self.keyings, 0)  # events numbered, over the partitions

    @property
    def columns(self) -> list[str]:
        """The position columns the held events carry."""
        return [position_column(keys) for keys in self.keyings]

    def unnumbered(self, part: Columns) -> Columns:
        """`part` (events just read) with position columns not yet decided (NaN)."""
        for column in self.columns:
            part.data[column] = np.full(len(part), np.nan)
        return part

    def number(self, pool: Columns, low: float, high: float) -> None:
        """Number the events of `pool` whose ts lies in [low, high), each partition from
        its next position; a repeated (key, ts, id) counts once, as in the batch run."""
        stamps = np.asarray(pool[EVENT_TS], dtype=np.float64)
        rows = np.flatnonzero((stamps >= low) & (stamps < high))
        if not len(rows):
            return
        ids = np.asarray(pool[EVENT_ID], dtype=np.int64)
        for keys in self.keyings:
            codes = key_codes(pool, keys)[rows]
            chosen = rows[codes >= 0]
            codes = codes[codes >= 0]
            if not len(chosen):
                continue
            order = np.lexsort((ids[chosen], stamps[chosen], codes))
            chosen, codes = chosen[order], codes[order]
            starts = np.r_[True, codes[1:] != codes[:-1]]
            fresh = starts | np.r_[True, (stamps[chosen][1:] != stamps[chosen][:-1])
                                   | (ids[chosen][1:] != ids[chosen][:-1])]
            rank = np.cumsum(fresh) - 1
            first = np.maximum.accumulate(np.where(starts, np.arange(len(chosen)), 0))
            within = rank - rank[first]
            following = self.next[keys]
            base = np.empty(len(chosen), dtype=np.int64)
            for start, end in _runs(starts):
                key = _key(pool, keys, chosen[start])
                base[start:end] = following.get(key, 0)
                following[key] = int(base[start] + within[end - 1] + 1)
            self.counted[keys] += int(np.count_nonzero(fresh))
            at = np.array(pool[position_column(keys)], dtype=np.float64)  # may be read-only
            at[chosen] = base + within
            pool.data[position_column(keys)] = at

    def reached(self, pool: Columns) -> np.ndarray:
        """Which numbered events of `pool` a match not yet emitted may reach: within the
        widest count window of the last position numbered in their partition."""
        out = np.zeros(len(pool), dtype=bool)
        for keys in self.keyings:
            at = pool[position_column(keys)]
            codes = key_codes(pool, keys)
            present = np.flatnonzero(codes >= 0)
            if not len(present):
                continue
            found, first = np.unique(codes[present], return_index=True)
            lowest = np.full(int(found.max()) + 1, np.inf)
            for code, row in zip(found, present[first], strict=True):
                lowest[code] = self.next[keys].get(_key(pool, keys, row), 0) - self.reach[keys]
            out[present] |= at[present] >= lowest[codes[present]]
        return out

    def time_spans(self, patterns: Sequence[PatternSpec], span: float) -> dict[str, float]:
        """Per count-window pattern, the time its window's positions took on average over
        the stream's time `span` (as `PositionCounter.time_spans` for a batch run)."""
        return {p.name: p.window_events * span / self.counted[p.partition_by]
                if self.counted[p.partition_by] else 0.0
                for p in patterns if p.window_events}

    def state(self) -> dict[str, Any]:
        """The next positions and counts, as JSON values (for a checkpoint)."""
        return {position_column(keys): {"next": [[list(k), n] for k, n in following.items()],
                                        "counted": self.counted[keys]}
                for keys, following in self.next.items()}

    def restore(self, state: dict[str, Any]) -> None:
        """Put back what `state` recorded."""
        for keys in self.keyings:
            saved = state[position_column(keys)]
            self.next[keys] = {tuple(k): int(n) for k, n in saved["next"]}
            self.counted[keys] = int(saved["counted"])


def _runs(starts: np.ndarray) -> list[tuple[int, int]]:
    """The [start, end) of each run that `starts` opens."""
    begins = np.flatnonzero(starts).tolist()
    return list(zip(begins, [*begins[1:], len(starts)], strict=True))


def _key(pool: Columns, keys: tuple[str, ...], row: int) -> Key:
    """The key values of one row, as plain Python values (JSON and dict keys alike)."""
    return tuple(_plain(pool[k][row]) for k in keys)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    return int(value) if isinstance(value, float) and math.isfinite(value) and \
        value.is_integer() else value
