"""Time slices of one key's events: each owns the matches whose latest event falls in it and
carries the window before it, so matches are rendered and written slice by slice and memory
holds one slice's matches, not the pattern's (the Spark job's range-local tasks cut alike)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from cepplan.engine_adapter.runtime.job import partitions
from cepplan.engine_adapter.runtime.positions import position_column
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Columns, values
from cepplan.workload.columns import EVENT_TS

if TYPE_CHECKING:
    import pandas as pd

SLICE_ROWS = 1 << 14  # events per owned time range of one key


def slices(frame: pd.DataFrame | Columns, spec: PatternSpec, rows: int | None = None
           ) -> Iterator[tuple[pd.DataFrame | Columns, tuple[float, float]]]:
    """Per key, time ranges of about `rows` events (default `SLICE_ROWS`, read at call time),
    each with the window before it (and after it, when a negation can look ahead)."""
    rows = SLICE_ROWS if rows is None else rows
    back = spec.window or 0.0
    ahead = back if spec.negated else 0.0
    for group in partitions(frame, spec.partition_by):
        if len(group) <= rows:
            yield group, (-math.inf, math.inf)
            continue
        stamps = np.asarray(values(group, EVENT_TS), dtype=np.float64)
        for own in time_ranges(np.sort(stamps), rows):
            inside = _reaching(group, spec, stamps, own[0], back) & (stamps <= own[1] + ahead)
            yield (group.take(inside) if isinstance(group, Columns) else group[inside], own)


def _reaching(group: pd.DataFrame | Columns, spec: PatternSpec, stamps: np.ndarray,
              low: float, back: float) -> np.ndarray:
    """The events a match whose latest event is at or after `low` may reach back to: within
    the window in time, or in positions for a count window (`positions`)."""
    if not spec.window_events:
        return stamps >= low - back
    clock = np.asarray(values(group, position_column(spec.partition_by)), dtype=np.float64)
    owned = clock[stamps >= low]
    return clock >= (owned.min() if len(owned) else math.inf) - spec.window_events


def time_ranges(stamps: np.ndarray, rows: int) -> Iterator[tuple[float, float]]:
    """Time ranges [low, high) of about `rows` of the sorted `stamps` each, the first open
    below and the last above: each owns the matches whose latest event falls in it."""
    cuts = np.unique(stamps[::rows])
    bounds = [-math.inf, *cuts[1:], math.inf]
    return pairwise(bounds)
