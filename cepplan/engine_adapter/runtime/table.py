"""An event table held as NumPy columns, in the total order of DESIGN.md ("Semantics").

Events are ordered by (timestamp, event id, type): the arrival sequence number is the event id
(the id column, or the row's position in the input). Position in this order is an event's
rank; every index the matcher handles is a rank into the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

if TYPE_CHECKING:  # pandas loads slowly: the in-process engine's plain path runs without it
    import pandas as pd


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

    def between(self, first: int, last: int) -> Table:
        """Ranks [first, last) as a table of their own (views, no copy): rank r there is
        rank first + r here."""
        return Table(self.ts[first:last], self.ids[first:last], self.types[first:last],
                     {name: column[first:last] for name, column in self.columns.items()})


class Columns:
    """Canonical events as named NumPy columns of equal length, each already in
    `column_values` form: the in-process engine's batches, without pandas (which takes a
    fifth of a small run to import). The type column is held as codes into `types`."""

    def __init__(self, data: Mapping[str, np.ndarray], codes: np.ndarray | None = None,
                 types: Sequence[str] = ()):
        self.data = dict(data)
        self.codes = codes  # EVENT_TYPE as positions in `types` (instead of a column)
        self.types = list(types)
        self.length = len(codes) if codes is not None else len(next(iter(self.data.values())))

    @property
    def columns(self) -> list[str]:
        return ([EVENT_TYPE] if self.codes is not None else []) + list(self.data)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, name: str) -> np.ndarray:
        if name == EVENT_TYPE and self.codes is not None:
            return np.asarray(self.types, dtype=object)[self.codes]
        return self.data[name]

    def type_mask(self, name: str) -> np.ndarray:
        """Which rows are events of type `name`."""
        if self.codes is None:
            return self.data[EVENT_TYPE] == name
        return self.codes == (self.types.index(name) if name in self.types else -1)

    def take(self, rows: np.ndarray, names: Iterable[str] | None = None) -> Columns:
        """The rows at `rows` (a mask or positions), of the columns `names` (default all);
        the type column, if taken, as strings."""
        names = self.columns if names is None else list(names)
        return Columns({n: self[n][rows] for n in names})

    def to_pandas(self) -> pd.DataFrame:
        """The same columns as a pandas frame (for the engine's stages that use pandas)."""
        import pandas as pd

        frame = pd.DataFrame({n: self.data[n] for n in self.data})
        if self.codes is not None:
            frame.insert(0, EVENT_TYPE, pd.Categorical.from_codes(self.codes, self.types))
        return frame

    @staticmethod
    def concat(parts: Sequence[Columns], names: Sequence[str]) -> Columns:
        """Rows of `parts` one after the other (type columns as strings; whole numbers
        exact, `joined_values`)."""
        if not parts:
            return Columns({n: np.empty(0, dtype=np.float64 if n == EVENT_TS else
                                        np.int64 if n == EVENT_ID else object)
                            for n in names})
        if len(parts) == 1:
            return parts[0]
        return Columns({n: joined_values([p[n] for p in parts]) for n in parts[0].columns})


def joined_releasing(held: list[Columns], names: Sequence[str]) -> Columns:
    """`Columns.concat` of the held parts (`names`: the columns of none), emptying `held`:
    each column of the parts is released as soon as it is joined, so that the rows are not
    held twice (parts and pool) while the pool is built and matched."""
    if len(held) < 2:
        pool = Columns.concat(held, names)
        held.clear()
        return pool
    data = {}
    for name in held[0].columns:
        data[name] = joined_values([part[name] for part in held])
        for part in held:
            part.data.pop(name, None)
    held.clear()
    return Columns(data)


def key_codes(frame: Columns, keys: Sequence[str]) -> np.ndarray:
    """Per row, its key's number in order of first appearance (-1: a key value is missing,
    NULL or NaN), from Arrow's hash of each key column: no pandas."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = [pc.dictionary_encode(pa.array(frame[key], from_pandas=True)) for key in keys]
    present = np.ones(len(frame), dtype=bool)
    for one in encoded:
        present &= ~pc.is_null(one.indices).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(present)  # numbered among the rows with every key value
    codes = np.zeros(len(rows), dtype=np.int64)
    for index, one in enumerate(encoded):
        values = one.indices.to_numpy(zero_copy_only=False)[rows].astype(np.int64)
        codes = codes * len(one.dictionary) + values
        if index:  # the pairs numbered in order of first appearance again (no overflow)
            codes = pc.dictionary_encode(pa.array(codes)).indices.to_numpy().astype(np.int64)
    out = np.full(len(frame), -1, dtype=np.int64)
    out[rows] = codes
    return out


EXACT_DOUBLES = 2**53  # whole numbers up to this size are doubles exactly


def whole_numbers(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """A whole-number attribute in `column_values` form: int64 when no value is missing;
    with missing ones float64 and NaN when every value is a double exactly, else Python
    integers and None (an object array: exact, slower; a double would merge ids and keys
    beyond 2^53)."""
    if present.all():
        return values.astype(np.int64, copy=False)
    kept = values[present]
    if not ((kept < -EXACT_DOUBLES) | (kept > EXACT_DOUBLES)).any():
        return np.where(present, values, np.nan)
    out = values.astype(object)
    out[~present] = None
    return out


def joined_values(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Column parts one after the other; whole numbers exact where the parts' forms differ
    (int64 beside float64 with NaN would become doubles: as objects instead when they are
    too large to be doubles exactly)."""
    joined = np.concatenate(parts)
    if joined.dtype != np.float64 or all(p.dtype == np.float64 for p in parts):
        return joined
    large = any(p.dtype.kind in "iu" and len(p) and (np.abs(p.astype(np.float64)).max()
                                                    > EXACT_DOUBLES) for p in parts)
    return np.concatenate([_python_ints(p) for p in parts]) if large else joined


def _python_ints(values: np.ndarray) -> np.ndarray:
    """Whole numbers as Python integers, NaN as None (`whole_numbers`' object form)."""
    if values.dtype != np.float64:
        return values.astype(object)
    missing = np.isnan(values)
    out = np.where(missing, 0, values).astype(np.int64).astype(object)
    out[missing] = None
    return out


def concat_frames(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """pandas frames of the same columns one after the other, whole numbers exact
    (`joined_values`; pandas would make int64 beside float64 doubles)."""
    import pandas as pd

    joined = pd.concat(frames, ignore_index=True)
    for name in joined.columns:
        if joined[name].dtype == np.float64 and any(
                f[name].dtype.kind in "iu" for f in frames):
            joined[name] = joined_values([f[name].to_numpy() for f in frames])
    return joined


def values(frame: pd.DataFrame | Columns, name: str) -> np.ndarray:
    """A column of a pandas frame or of `Columns`, as `column_values` gives it."""
    return frame[name] if isinstance(frame, Columns) else column_values(frame[name])


def make_table(frame: pd.DataFrame | Columns, attributes: Iterable[str],
               type_order: str | None = None) -> Table:
    """Sort a canonical event frame into the total order and keep the attributes needed.
    `type_order`: a column of the frame ordering the events' types as their names do (for
    ties of timestamp and id; numbers sort faster than the names)."""
    plain = isinstance(frame, Columns)
    ts = np.asarray(frame[EVENT_TS], dtype=np.float64) if plain else frame[EVENT_TS].to_numpy(
        dtype=np.float64)
    ids = np.asarray(frame[EVENT_ID], dtype=np.int64) if plain else frame[EVENT_ID].to_numpy(
        dtype=np.int64)
    types = np.asarray(frame[EVENT_TYPE], dtype=object) if plain else frame[
        EVENT_TYPE].to_numpy(dtype=object)
    by_type = values(frame, type_order) if type_order is not None else types.astype(str)
    order = np.lexsort((by_type, ids, ts))
    columns = {}
    for attr in attributes:
        if attr in frame.columns:
            columns[attr] = values(frame, attr)[order]
        else:
            columns[attr] = np.full(len(frame), None, dtype=object)
    return Table(ts[order], ids[order], types[order], columns)


def column_values(series: pd.Series) -> np.ndarray:
    """A column as NumPy: numbers as float64 (missing -> NaN), anything else as objects."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(series.dtype) and not series.isna().any():
        return series.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        if pd.api.types.is_integer_dtype(series.dtype):
            return whole_numbers(series.to_numpy(dtype=np.int64, na_value=0),
                                 series.notna().to_numpy())
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return series.to_numpy(dtype=object)


def expand(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Range expansion: for row r, every position in [starts[r], ends[r]); returns (rows,
    positions). The vectorised time-range look-up behind every join of the matcher."""
    counts = np.maximum(ends - starts, 0)
    rows = np.repeat(np.arange(len(starts)), counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return rows, starts[rows] + offsets
