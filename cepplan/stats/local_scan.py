"""The in-process statistics engine: the tables of `scan.EventScan` from the reader's NumPy
batches (`local_source.read_canonical`), no JVM.

One streaming pass counts rows per (reject reason, type, time step) (`step_tally.py`) and per
(type, key and region columns), and keeps the valid rows in the blocks fixed before the scan
(`block_sample.py`) while they number at most `keep_rows`; the sample is then cut from them,
or read in a second pass when they did not fit or do not cover the final blocks. Memory: one
batch, the kept rows (about 1.25 times the sample) and the counts, never the input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow

from cepplan.errors import InputError
from cepplan.sources.local_source import REJECT, Canonical, SourceError, batch_frame, read_canonical
from cepplan.stats.block_sample import covers, in_blocks
from cepplan.stats.freed_memory import return_freed_memory
from cepplan.stats.scan import COUNT, STEP, SampleBlocks
from cepplan.stats.step_tally import StepTally, narrow
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.model import Workload
from cepplan.workload.source_spec import reader_arguments

KEEP_ROWS = 2_000_000


class LocalScan:
    """`scan.EventScan` in this process; `columns` are the key / attribute columns kept,
    `group_columns` those rows are counted by."""

    engine = "local"

    def __init__(self, paths: Sequence[str], workload: Workload, columns: Sequence[str],
                 group_columns: Sequence[str], *,
                 keep_rows: int = KEEP_ROWS):
        self.versions = {"pyarrow": pyarrow.__version__}
        self._paths = list(paths)
        self._arguments = reader_arguments(workload)
        self._columns = list(columns)
        self._group_columns = list(group_columns)
        self._presample: list[SampleBlocks] = []
        self._keep_rows = keep_rows
        self._kept: list[pd.DataFrame] | None = []
        self._counted: pd.DataFrame | None = None

    def _batches(self) -> Iterator[Canonical]:
        """The files' batches, the memory of each returned to the system once it is used."""
        try:
            for batch in read_canonical(self._paths, **self._arguments):
                yield batch
                return_freed_memory()
        except SourceError as err:
            raise InputError.single(err.path or ", ".join(self._paths), "",
                                    err.message) from None

    def step_counts(self, time_step: float, presample: list[SampleBlocks]) -> pd.DataFrame:
        steps, rejected = StepTally(), Counter()
        groups = _GroupTally(self._group_columns)
        kept = 0
        self._presample = list(presample)
        if not presample:
            self._kept = None
        for batch in self._batches():
            good = batch.reject < 0
            if not good.all():
                rejected.update(_reject_pairs(batch, ~good))
            valid = np.flatnonzero(good)
            steps.add(batch.type_codes[valid], batch.type_names,
                      np.floor(batch.ts[valid] / time_step).astype(np.int64))
            groups.add(batch, valid)
            if self._kept is not None:
                rows = valid[_in_blocks(batch, valid, presample)]
                kept += len(rows)
                if kept <= self._keep_rows:
                    self._kept.append(_compact(batch_frame(batch, self._columns, rows)))
                else:
                    self._kept = None
        self._counted = groups.total()
        table = _step_table(steps, rejected)
        return_freed_memory()  # the tally's, copied into the table
        return table

    def groups_and_sample(self, blocks: list[SampleBlocks], group_columns: list[str],
                          attributes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        if self._counted is None or group_columns != self._group_columns:
            raise ValueError("step_counts must run first, with the same group columns")
        columns = [EVENT_TYPE, EVENT_TS, EVENT_ID,
                   *dict.fromkeys([*group_columns, *attributes])]
        held = self._kept is not None and covers(self._presample, blocks)
        if held:
            kept, self._kept = self._kept, None  # each part freed once cut
            parts = [rows.loc[in_blocks(rows[EVENT_TYPE], rows[EVENT_TS].to_numpy(),
                                        blocks), columns] for rows in _drained(kept)]
        else:
            parts = []
            for batch in self._batches():
                valid = np.flatnonzero(batch.reject < 0)
                parts.append(batch_frame(batch, columns, valid[_in_blocks(batch, valid,
                                                                          blocks)])[columns])
        if not parts:
            return self._counted, pd.DataFrame(columns=columns)
        collected = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)
        return self._counted, collected.astype({  # text as read (see _compact)
            c: object for c in columns if c != EVENT_TYPE and collected[c].dtype == "category"})


def _drained(parts: list[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """The parts in order, each dropped from the list as it is handed on."""
    parts.reverse()
    while parts:
        yield parts.pop()


def _compact(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` with their text columns as categoricals: small codes referring to each distinct
    text once, instead of objects spread over the memory of the batch they were read in."""
    for column in [c for c in rows.columns if rows[c].dtype == object]:
        codes, texts = pd.factorize(rows[column].to_numpy())  # 5x cheaper than astype
        rows[column] = pd.Categorical.from_codes(codes, pd.Index(texts, dtype=object),
                                                 validate=False)
    return rows


def _in_blocks(batch: Canonical, rows: np.ndarray, blocks: list[SampleBlocks]) -> np.ndarray:
    """Which of `rows` (positions in `batch`) lie in `blocks`."""
    types = pd.Categorical.from_codes(batch.type_codes[rows], batch.type_names)
    return in_blocks(types, batch.ts[rows], blocks)


def _reject_pairs(batch: Canonical, bad: np.ndarray) -> dict[tuple[str, str | None], int]:
    """Rejected rows per (reason, type name; None for a missing type)."""
    names = [*batch.type_names, None]  # code -1: the last
    pairs = batch.reject[bad].astype(np.int64) * len(names) + batch.type_codes[bad]
    pairs[batch.type_codes[bad] < 0] += len(names)
    values, counts = np.unique(pairs, return_counts=True)
    return {(batch.reasons[v // len(names)], names[v % len(names)]): int(c)
            for v, c in zip(values, counts, strict=True)}


def _step_table(steps: StepTally, rejected: Counter) -> pd.DataFrame:
    """The table of `EventScan.step_counts` from the tallies: type and reason categoricals,
    the rejected rows first (no step), then each type's steps in order."""
    sizes = [steps.size(code) for code in range(len(steps.names))]
    total = len(rejected) + sum(sizes)
    names = sorted({*steps.names, *(t for _, t in rejected if t is not None)})
    name_code = {name: code for code, name in enumerate(names)}
    reasons = sorted({r for r, _ in rejected})
    type_codes = np.empty(total, dtype=_code_type(len(names)))
    step_values = np.zeros(total, dtype=steps.step_type())
    counts = np.empty(total, dtype=np.result_type(
        steps.count_type(), narrow(np.array([*rejected.values()], dtype=np.int64))))
    at = len(rejected)
    for (_, name), count, index in zip(rejected, rejected.values(), range(at), strict=True):
        type_codes[index] = -1 if name is None else name_code[name]
        counts[index] = count
    for code in sorted(range(len(steps.names)), key=steps.names.__getitem__):  # in name
        type_codes[at:at + sizes[code]] = name_code[steps.names[code]]  # order, as the
        # summary takes them
        for type_steps, type_counts in steps.drain(code):
            step_values[at:at + len(type_steps)], counts[at:at + len(type_steps)] = \
                type_steps, type_counts
            at += len(type_steps)
    reject_codes = np.full(total, -1, dtype=_code_type(len(reasons)))
    reason_code = {reason: code for code, reason in enumerate(reasons)}
    reject_codes[:len(rejected)] = [reason_code[r] for r, _ in rejected]
    missing = np.zeros(total, dtype=bool)
    missing[:len(rejected)] = True
    return pd.DataFrame({
        REJECT: pd.Categorical.from_codes(reject_codes, reasons),
        EVENT_TYPE: pd.Categorical.from_codes(type_codes, names),
        STEP: pd.arrays.IntegerArray(step_values, missing),
        COUNT: counts}, copy=False)


def _code_type(categories: int) -> np.dtype:
    """The smallest integer type of the codes of `categories` categories (and -1)."""
    return np.min_scalar_type(-categories - 1)


class _GroupTally:
    """Rows per (type, `columns`) over batches (NULL values kept), the partial counts summed
    whenever they outnumber the summed ones."""

    def __init__(self, columns: list[str]):
        self._columns = columns
        self._keys = [EVENT_TYPE, *columns]
        self._summed: pd.DataFrame | None = None
        self._pending: list[pd.DataFrame] = []

    def add(self, batch: Canonical, rows: np.ndarray) -> None:
        """Count `rows` (positions in `batch`): grouped on the values' codes, one frame row
        per combination, with the values of its first row."""
        if not len(rows):
            return
        codes = pd.factorize(batch.type_codes[rows])[0]
        for column in self._columns:
            values, known = _column_codes(batch, column, rows)
            codes = pd.factorize(codes * (known + 1) + values)[0]
        counts = np.bincount(codes)
        seen = np.maximum.accumulate(codes)  # codes number combinations as they first occur
        first = np.flatnonzero(np.concatenate([[True], seen[1:] > seen[:-1]]))
        counted = batch_frame(batch, self._columns, rows[first])[self._keys]
        counted[COUNT] = counts
        self._pending.append(counted)
        held = 0 if self._summed is None else len(self._summed)
        if sum(len(p) for p in self._pending) > max(held, 1 << 16):
            self._sum()

    def total(self) -> pd.DataFrame:
        self._sum()
        return self._summed

    def _sum(self) -> None:
        parts = [p for p in (self._summed, *self._pending) if p is not None]
        self._pending = []
        if not parts:
            self._summed = pd.DataFrame(columns=[*self._keys, COUNT])
            return
        table = pd.concat(parts, ignore_index=True)
        table = table.astype({k: object for k in self._keys if table[k].dtype == "category"})
        self._summed = table.groupby(self._keys, dropna=False, as_index=False,
                                     sort=False)[COUNT].sum()


def _column_codes(batch: Canonical, column: str, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """A key or attribute column's values at `rows` as codes (NULL: a code of its own) and
    the number of codes."""
    if column in batch.keys:
        return _codes(batch.keys[column][rows])
    values, present = batch.attributes[column]
    codes, known = _codes(values[rows])
    return np.where(present[rows], codes, known), known + 1


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64), len(uniques)
