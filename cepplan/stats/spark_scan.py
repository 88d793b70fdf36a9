"""The Spark statistics engine: the per-step table and the key counts + selectivity sample of
`scan.EventScan`, computed by Spark over `spark_source.read_events`.

Two scans as two concurrent Spark jobs (caching the parsed rows measured slower than reading
them again, for Parquet and CSV alike): one aggregation with two grouping sets, rows per
(reject reason, type, time step) and per (type, key and region columns); and, started beside
it because the sample's blocks are fixed before the scan (`block_sample.py`), a filter that
brings the valid rows of those blocks. The sample is cut from them once the counts are known,
or read again in the rare case they do not cover it (the type counts were overestimated).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cepplan.errors import InputError
from cepplan.stats.block_sample import INDEX_LIMIT, covers, in_blocks
from cepplan.stats.parquet_nulls import columns_without_nulls
from cepplan.stats.row_estimate import head_groups
from cepplan.stats.scan import COUNT, STEP, SampleBlocks
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, merged_attribute_types
from cepplan.workload.model import Workload
from cepplan.workload.source_spec import attribute_types, reader_arguments
from cepplan.workload.spark_source import REJECT, SourceError, read_events

KNOWN_GROUPS = 16  # at most this many groups of the first rows get a counter of their own
FIRST_JOB_WAIT = 2.0  # seconds the sample job waits for the counting job to start
_SET = "__set"  # which grouping set a row of the first aggregation counts in
_GROUP = "__group"  # which known group a valid row belongs to (-1: another one)


class SparkScan:
    """`scan.EventScan` on a SparkSession; `columns` are the key / attribute columns kept,
    `group_columns` those rows are counted by."""

    engine = "spark"

    def __init__(self, spark: SparkSession, paths: Sequence[str], workload: Workload,
                 columns: Sequence[str], group_columns: Sequence[str]):
        self.versions = {"spark": spark.version}
        try:
            events = read_events(spark, list(paths), **reader_arguments(workload),
                                 positions="monotonic",
                                 no_nulls=columns_without_nulls(paths, workload))
        except SourceError as err:
            raise InputError.single(err.path or ", ".join(paths), "", err.message) from None
        # no ids: the sample is renumbered in a canonical order, and Spark's monotonic ids
        # (nondeterministic) measured to double the cost of the first scan
        self._events = events.select(EVENT_TYPE, EVENT_TS, F.lit(0).cast("long").alias(EVENT_ID),
                                     REJECT, *[c for c in columns if c in events.columns])
        self._group_columns = list(group_columns)
        kinds = merged_attribute_types(attribute_types(workload).values())
        text = all(kinds.get(c, "string") == "string" for c in self._group_columns)  # as read
        self._known_groups = (head_groups(paths, workload, self._group_columns, KNOWN_GROUPS)
                              if text else None) or []
        self._counted: pd.DataFrame | None = None
        self._presample: list[SampleBlocks] = []
        self._gathering: _Background | None = None
        self._counting_done = threading.Event()

    def step_counts(self, time_step: float, presample: list[SampleBlocks]) -> pd.DataFrame:
        """Rows per (reject, type, step), and valid rows per (type, key and region columns),
        which `groups_and_sample` returns, in one aggregation; meanwhile another job gathers
        the rows of `presample`'s blocks."""
        valid = F.col(REJECT).isNull()
        step = F.when(valid, F.floor(F.col(EVENT_TS) / F.lit(time_step))).cast("long")
        self._presample = list(presample)
        if presample:
            self._gathering = _Background(lambda: self._rows_in(presample, after_another=True))
        try:
            if self._known_groups or not self._group_columns:
                return self._counted_per_known_group(valid, step)
            return self._counted_by_grouping_sets(valid, step)
        finally:
            self._counting_done.set()

    def _counted_by_grouping_sets(self, valid: Column, step: Column) -> pd.DataFrame:
        """Two grouping sets (as Spark's Expand does, by hand, so that Spark 3.5 runs it too):
        every row goes to the per-step set, each valid row also to the per-group one."""
        grouping = F.explode(F.array(F.lit(0), F.lit(1))).alias(_SET)
        first = F.col(_SET) == 0
        keys = [F.when(first, F.col(REJECT)).alias(REJECT), F.col(EVENT_TYPE),
                F.when(first, step).alias(STEP),
                *(F.when(~first, F.col(c)).alias(c) for c in self._group_columns)]
        table = _to_pandas(self._events.select("*", grouping).filter(first | valid)
                           .groupBy(_SET, *keys).agg(F.count(F.lit(1)).alias(COUNT)))
        in_first = table[_SET] == 0
        self._counted = table.loc[~in_first, [EVENT_TYPE, *self._group_columns, COUNT]]
        return table.loc[in_first, [REJECT, EVENT_TYPE, STEP, COUNT]]

    def _counted_per_known_group(self, valid: Column, step: Column) -> pd.DataFrame:
        """One grouping, per (reject, type, step), that also counts the valid rows of each
        group guessed from the first rows (`head_groups`) in a column of its own: a few
        counters per step instead of a second row per event. Rows of other groups, if any,
        are counted by a second scan."""
        which = None  # the index of the row's group among the known ones, -1 for another
        for index, values in enumerate(self._known_groups):
            match = _equal(self._group_columns, values)
            which = (F.when(match, F.lit(index)) if which is None
                     else which.when(match, F.lit(index)))
        group = F.when(valid, F.lit(-1) if which is None else which.otherwise(F.lit(-1)))
        counters = [F.count_if(F.col(_GROUP) == index).alias(f"{_SET}{index}")
                    for index in range(len(self._known_groups))]
        table = _to_pandas(self._events.select("*", group.alias(_GROUP))
                           .groupBy(REJECT, EVENT_TYPE, step.alias(STEP))
                           .agg(F.count(F.lit(1)).alias(COUNT), *counters,
                                F.count_if(F.col(_GROUP) == -1).alias(_SET)))
        names = [f"{_SET}{index}" for index in range(len(self._known_groups))]
        per_type = table.groupby(EVENT_TYPE)[names].sum() if names else None
        counted = [pd.DataFrame({EVENT_TYPE: per_type.index.astype(object),
                                 **{c: [v] * len(per_type) for c, v in
                                    zip(self._group_columns, values, strict=True)},
                                 COUNT: per_type[name].to_numpy(dtype="int64")})
                   for name, values in zip(names, self._known_groups, strict=True)]
        if names and table[_SET].sum() > 0:
            counted.append(_to_pandas(self._events.filter(group == -1).groupBy(
                EVENT_TYPE, *self._group_columns).agg(F.count(F.lit(1)).alias(COUNT))))
        counted = [c for c in counted if len(c)]
        self._counted = (pd.concat(counted, ignore_index=True) if counted else
                         pd.DataFrame(columns=[EVENT_TYPE, *self._group_columns, COUNT]))
        self._counted = self._counted[self._counted[COUNT] > 0].reset_index(drop=True)
        return table[[REJECT, EVENT_TYPE, STEP, COUNT]]

    def groups_and_sample(self, blocks: list[SampleBlocks], group_columns: list[str],
                          attributes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The counts of `step_counts`, and a filtering scan bringing the sampled rows."""
        if self._counted is None or group_columns != self._group_columns:
            raise ValueError("step_counts must run first, with the same group columns")
        columns = [EVENT_TYPE, EVENT_TS, EVENT_ID, *dict.fromkeys([*group_columns,
                                                                   *attributes])]
        if not blocks:
            return self._counted, pd.DataFrame(columns=columns)
        gathered = self._gathering.result() if self._gathering is not None else None
        if gathered is None or not covers(self._presample, blocks):
            gathered = self._rows_in(blocks)
        wanted = in_blocks(gathered[EVENT_TYPE], gathered[EVENT_TS].to_numpy(), blocks)
        return self._counted, gathered.loc[wanted, columns].reset_index(drop=True)

    def _rows_in(self, blocks: list[SampleBlocks], after_another: bool = False) -> pd.DataFrame:
        """The valid rows inside `blocks` (a filtering scan; the block test comes first, so
        the reject checks run on those rows only). `after_another`: submitted once another
        job is running (at most `FIRST_JOB_WAIT` s later), so that Spark's FIFO scheduler
        gives that one, the counts the driver waits for, the cores first."""
        if after_another:
            tracker = self._events.sparkSession.sparkContext.statusTracker()
            deadline = time.monotonic() + FIRST_JOB_WAIT
            while (not tracker.getActiveJobsIds() and not self._counting_done.is_set()
                   and time.monotonic() < deadline):
                self._counting_done.wait(0.02)
        return _to_pandas(self._events.filter(_in_blocks(blocks) & F.col(REJECT).isNull())
                          .drop(REJECT))


def _equal(columns: list[str], values: tuple[str | None, ...]) -> Column:
    """The row's `columns` hold `values` (NULL equal to NULL)."""
    return functools.reduce(Column.__and__, [F.col(c).eqNullSafe(F.lit(v))
                                             for c, v in zip(columns, values, strict=True)])


def _in_blocks(plans: list[SampleBlocks]) -> Column:
    """`block_sample.in_blocks` as a Spark condition (the same hash, `hash(block, seed)`)."""
    wanted = F.lit(False)
    for plan in plans:
        condition = F.col(EVENT_TYPE).isin(list(plan.types))
        if plan.threshold is not None:
            ratio = F.col(EVENT_TS) / F.lit(float(plan.length))
            index = F.floor(F.least(F.greatest(ratio, F.lit(-INDEX_LIMIT)),
                                    F.lit(INDEX_LIMIT))).cast("long")
            hashed = F.hash(index, F.lit(plan.seed).cast("long")).bitwiseAND(F.lit(0x7FFFFFFF))
            condition = condition & (hashed < F.lit(plan.threshold))
        wanted = wanted | condition
    return wanted


class _Background:
    """A call run in a daemon thread (a Spark job beside the main one); `result()` waits for
    it and raises what it raised. Daemon: an interrupted run does not wait for it."""

    def __init__(self, call: Callable[[], pd.DataFrame]):
        self._outcome: dict[str, object] = {}
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], pd.DataFrame]) -> None:
        try:
            self._outcome["value"] = call()
        except BaseException as err:  # handed to the caller of result()
            self._outcome["error"] = err

    def result(self) -> pd.DataFrame:
        self._thread.join()
        if "error" in self._outcome:
            raise self._outcome["error"]  # type: ignore[misc]
        return self._outcome["value"]  # type: ignore[return-value]


def _to_pandas(frame: DataFrame) -> pd.DataFrame:
    """Bring a small result to the driver through Arrow (whatever the session's setting)."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow().to_pandas()
    return frame.toPandas()
