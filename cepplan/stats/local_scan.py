"""The in-process statistics engine: the tables of `scan.EventScan` from pyarrow batches
(`local_source.read_batches`), no JVM.

One streaming pass counts rows per (reject reason, type, time step) and per (type, key and
region columns), and keeps the valid rows in the blocks fixed before the scan
(`block_sample.py`) while they number at most `keep_rows`; the sample is then cut from them,
or read in a second pass when they did not fit or do not cover the final blocks. Memory: one
batch plus the kept rows (about 1.25 times the sample).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow

from cepplan.errors import InputError
from cepplan.stats.block_sample import covers, in_blocks
from cepplan.stats.local_source import REJECT, SourceError, read_batches
from cepplan.stats.scan import COUNT, STEP, SampleBlocks
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

    def _batches(self):
        try:
            yield from read_batches(self._paths, **self._arguments, columns=self._columns)
        except SourceError as err:
            raise InputError.single(err.path or ", ".join(self._paths), "",
                                    err.message) from None

    def step_counts(self, time_step: float, presample: list[SampleBlocks]) -> pd.DataFrame:
        steps, groups = [], []
        kept = 0
        self._presample = list(presample)
        if not presample:
            self._kept = None
        for batch in self._batches():
            good = batch[REJECT].isna().to_numpy()
            bad = batch[~good]
            if len(bad):
                steps.append(_counts(bad, [REJECT, EVENT_TYPE]))
            valid = batch[good]
            step = np.floor(valid[EVENT_TS].to_numpy() / time_step).astype(np.int64)
            steps.append(_counts(valid.assign(**{STEP: step}), [EVENT_TYPE, STEP]))
            groups.append(_counts(valid, [EVENT_TYPE, *self._group_columns]))
            if self._kept is not None:
                rows = valid[in_blocks(valid[EVENT_TYPE], valid[EVENT_TS].to_numpy(),
                                       presample)]
                kept += len(rows)
                if kept <= self._keep_rows:
                    self._kept.append(rows)
                else:
                    self._kept = None
        self._counted = _sum(groups, [EVENT_TYPE, *self._group_columns])
        table = pd.concat(steps, ignore_index=True) if steps else pd.DataFrame(
            columns=[REJECT, EVENT_TYPE, STEP, COUNT])
        if REJECT not in table:
            table[REJECT] = None
        table[STEP] = table[STEP].astype("Int64") if STEP in table else pd.NA
        return _sum([table], [REJECT, EVENT_TYPE, STEP])

    def groups_and_sample(self, blocks: list[SampleBlocks], group_columns: list[str],
                          attributes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        if self._counted is None or group_columns != self._group_columns:
            raise ValueError("step_counts must run first, with the same group columns")
        columns = [EVENT_TYPE, EVENT_TS, EVENT_ID,
                   *dict.fromkeys([*group_columns, *attributes])]
        held = self._kept is not None and covers(self._presample, blocks)
        sources = self._kept if held else (
            batch[batch[REJECT].isna()] for batch in self._batches())
        parts = [rows.loc[in_blocks(rows[EVENT_TYPE], rows[EVENT_TS].to_numpy(),
                                    blocks), columns] for rows in sources]
        collected = (pd.concat(parts, ignore_index=True) if parts
                     else pd.DataFrame(columns=columns))
        return self._counted, collected


def _counts(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows per combination of `keys` present (NULL keys kept), categories as text."""
    counted = rows.groupby(keys, dropna=False, observed=True).size().rename(COUNT).reset_index()
    return counted.astype({k: object for k in keys if counted[k].dtype == "category"})


def _sum(parts: list[pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    """Partial counts summed per key (NULL keys kept)."""
    if not parts:
        return pd.DataFrame(columns=[*keys, COUNT])
    table = pd.concat(parts, ignore_index=True)
    return table.groupby(keys, dropna=False, as_index=False, sort=False)[COUNT].sum()
