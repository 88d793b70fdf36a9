"""Read event files through a workload's `source` for the in-process engine: the reader of
`cepplan.sources.local_source` (pyarrow, Spark's casts and reject reasons), its batches
handed over as the engine's `Batch`: the good rows (of the types the patterns read) and a
count of the rejected ones per reason.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cepplan.engine_adapter.runtime.contiguity import StampOnly, Timeline
from cepplan.engine_adapter.runtime.table import Columns, whole_numbers
from cepplan.errors import InputError
from cepplan.sources.local_source import (
    REJECT_ID,
    REJECT_MALFORMED,
    REJECT_QUOTE,
    REJECT_TIME,
    REJECT_TYPE_MISSING,
    REJECT_TYPE_UNKNOWN,
    Canonical,
    SourceError,
    read_canonical,
)
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_ZONE

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["REJECT_ID", "REJECT_MALFORMED", "REJECT_QUOTE", "REJECT_TIME", "REJECT_TYPE_MISSING",
           "REJECT_TYPE_UNKNOWN", "Batch", "read_batches"]
BATCH_BYTES = 1 << 20  # small: the streaming CSV reader reads many blocks ahead


@dataclass
class Batch:
    """Good rows of one batch in canonical columns (NumPy `Columns`; as pandas on demand),
    and the rejected rows' reasons."""

    good: Columns
    rejected: Counter
    read: int = 0  # rows read: good (handed over or not), rejected, malformed
    # the first and last timestamp of the good rows of every event type, handed over or not
    covered: tuple[float, float] = (math.inf, -math.inf)
    # with stamp-only types: the good rows of those and of the types handed over, as their
    # timestamps and partition keys, and which of them are the `good` rows
    timing: Columns | None = None
    handed: np.ndarray | None = None

    @property
    def events(self) -> pd.DataFrame:
        """The good rows as pandas (the event type categorical)."""
        return self.good.to_pandas()

    def columns(self) -> Columns:
        """The good rows as NumPy columns (`column_values` form), without pandas."""
        return self.good

    def stamp(self, timelines: Sequence[Timeline]) -> None:
        """The good rows stamped by each timeline among all the events it reads."""
        for timeline in timelines:
            timeline.stamp(self.good, self.timing, self.handed)


def read_batches(paths: Sequence[str], source: Mapping[str, Any],
                 attributes: Mapping[str, Mapping[str, str]], time_unit: str, *,
                 batch_bytes: int = BATCH_BYTES, only_types: Collection[str] | None = None,
                 stamp_only: StampOnly | None = None, text: bytes | None = None
                 ) -> Iterator[Batch]:
    """The files as canonical batches; `InputError` (naming the file) when a file cannot be
    read as the source says. Row ids without an `id_column`: positions over all files.
    With `only_types`, good rows of other types are counted but not handed over, but for
    the `stamp_only` types' timestamps and keys (`Batch.timing`). With `text`, whole CSV
    lines of the one file in `paths` (a Spark task's byte range)."""
    batches = read_canonical(paths, source, attributes, time_unit, batch_bytes=batch_bytes,
                             text=text)
    types = list(attributes)
    while True:
        try:
            batch = next(batches, None)
        except SourceError as err:
            raise InputError.single(err.path or ", ".join(paths), err.place,
                                    err.message) from None
        if batch is None:
            return
        yield _batch(batch, types, only_types, stamp_only)


def _batch(batch: Canonical, types: list[str], only_types: Collection[str] | None,
           stamp_only: StampOnly | None = None) -> Batch:
    """The good rows (of `only_types`) as `Columns`, the type as codes into `types` (the
    workload's event types, fixed for every batch), the `stamp_only` types' timing, and
    the rejected rows by reason."""
    good = batch.reject < 0
    rejected = Counter({reason: int(count) for reason, count in zip(
        batch.reasons, np.bincount(batch.reject[~good], minlength=len(batch.reasons)),
        strict=True) if count})
    codes = np.full(len(batch.type_names) + 1, -1, dtype=np.int32)  # batch's -> workload's
    timed = np.zeros(len(batch.type_names) + 1, dtype=bool)  # handed over or stamp-only
    for index, name in enumerate(batch.type_names):
        if name in types and (only_types is None or name in only_types):
            codes[index] = types.index(name)
        timed[index] = codes[index] >= 0 or (stamp_only is not None and name in types
                                             and name in stamp_only.types)
    codes = codes[batch.type_codes]
    rows = np.flatnonzero(good & (codes >= 0))
    data = {EVENT_TS: batch.ts[rows], EVENT_ID: batch.ids[rows]}
    data.update({k: v[rows] for k, v in batch.keys.items()})
    if batch.zones is not None:  # times written with a zone offset: written back in it
        data[EVENT_ZONE] = batch.zones[rows]
    for attr, (values, ok) in batch.attributes.items():
        data[attr] = _column(values[rows], ok[rows], batch.attribute_types[attr])
    stamps = batch.ts[good]
    covered = (float(stamps.min()), float(stamps.max())) if len(stamps) else (math.inf,
                                                                              -math.inf)
    out = Batch(Columns(data, codes=codes[rows], types=types), rejected, len(batch), covered)
    if stamp_only is not None and stamp_only.types:
        both = np.flatnonzero(good & timed[batch.type_codes])
        out.timing = Columns({EVENT_TS: batch.ts[both],
                              **{k: _key_column(batch, k, both) for k in stamp_only.keys}})
        out.handed = codes[both] >= 0
    return out


def _key_column(batch: Canonical, key: str, rows: np.ndarray) -> np.ndarray:
    """A partition key's values at `rows`: a key column of the source or an attribute."""
    if key in batch.keys:
        return batch.keys[key][rows]
    values, ok = batch.attributes[key]
    return _column(values[rows], ok[rows], batch.attribute_types[key])


def _column(values: np.ndarray, ok: np.ndarray, kind: str) -> np.ndarray:
    """An attribute in `column_values` form: whole numbers as int64 and flags as bool when
    none is missing, else float64 with NaN / objects with None."""
    if kind in ("string", "double") or ok.all():
        return values
    if kind == "long":
        return whole_numbers(values, ok)
    out = values.astype(object)
    out[~ok] = None
    return out
