"""An event table held as NumPy columns, in the total order of DESIGN.md ("Semantics").

Events are ordered by (timestamp, event id, type): the arrival sequence number is the event id
(the id column, or the row's position in the input). Position in this order is an event's
rank; every index the matcher handles is a rank into the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE


@dataclass(frozen=True)
class Table:
    """Events sorted in the total order: timestamps, ids, types and attribute columns."""

    ts: np.ndarray
    ids: np.ndarray
    types: np.ndarray
    columns: Mapping[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.ts)

    def column(self, attr: str) -> np.ndarray:
        """An attribute's values; `ts` is every event's timestamp (format doc)."""
        return self.ts if attr == "ts" else self.columns[attr]


def make_table(frame: pd.DataFrame, attributes: Iterable[str]) -> Table:
    """Sort a canonical event frame into the total order and keep the attributes needed."""
    ts = frame[EVENT_TS].to_numpy(dtype=np.float64)
    ids = frame[EVENT_ID].to_numpy(dtype=np.int64)
    types = frame[EVENT_TYPE].to_numpy(dtype=object)
    order = np.lexsort((types.astype(str), ids, ts))
    columns = {}
    for attr in attributes:
        if attr in frame.columns:
            columns[attr] = column_values(frame[attr])[order]
        else:
            columns[attr] = np.full(len(frame), None, dtype=object)
    return Table(ts[order], ids[order], types[order], columns)


def column_values(series: pd.Series) -> np.ndarray:
    """A column as NumPy: numbers as float64 (missing -> NaN), anything else as objects."""
    if pd.api.types.is_bool_dtype(series.dtype) and not series.isna().any():
        return series.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        if pd.api.types.is_integer_dtype(series.dtype) and not series.isna().any():
            return series.to_numpy(dtype=np.int64)
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return series.to_numpy(dtype=object)


def expand(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Range expansion: for row r, every position in [starts[r], ends[r]); returns (rows,
    positions). The vectorised time-range look-up behind every join of the matcher."""
    counts = np.maximum(ends - starts, 0)
    rows = np.repeat(np.arange(len(starts)), counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return rows, starts[rows] + offsets
