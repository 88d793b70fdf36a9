"""The Spark statistics engine: the per-step table and the key counts + selectivity sample of
`scan.EventScan`, computed by Spark over `spark_source.read_events`.

Two scans (caching the parsed rows measured slower than reading them again, for Parquet and
CSV alike): one aggregation with two grouping sets, rows per (reject reason, type, time step)
and per (type, key and region columns); then a filter that brings the sampled events.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cepplan.errors import InputError
from cepplan.stats.block_sample import INDEX_LIMIT
from cepplan.stats.scan import COUNT, STEP, SampleBlocks
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.model import Workload
from cepplan.workload.source_spec import reader_arguments
from cepplan.workload.spark_source import REJECT, SourceError, read_events

_SET = "__set"  # which grouping set a row of the first aggregation counts in


class SparkScan:
    """`scan.EventScan` on a SparkSession; `columns` are the key / attribute columns kept,
    `group_columns` those rows are counted by."""

    engine = "spark"

    def __init__(self, spark: SparkSession, paths: Sequence[str], workload: Workload,
                 columns: Sequence[str], group_columns: Sequence[str]):
        self.versions = {"spark": spark.version}
        try:
            events = read_events(spark, list(paths), **reader_arguments(workload),
                                 positions="monotonic")
        except SourceError as err:
            raise InputError.single(err.path or ", ".join(paths), "", err.message) from None
        # no ids: the sample is renumbered in a canonical order, and Spark's monotonic ids
        # (nondeterministic) measured to double the cost of the first scan
        self._events = events.select(EVENT_TYPE, EVENT_TS, F.lit(0).cast("long").alias(EVENT_ID),
                                     REJECT, *[c for c in columns if c in events.columns])
        self._group_columns = list(group_columns)
        self._counted: pd.DataFrame | None = None

    def step_counts(self, time_step: float, presample: list[SampleBlocks]) -> pd.DataFrame:
        """One aggregation with two grouping sets (as Spark's Expand does, by hand, so that
        Spark 3.5 runs it too): rows per (reject, type, step), and valid rows per (type, key
        and region columns), which `groups_and_sample` returns."""
        valid = F.col(REJECT).isNull()
        step = F.when(valid, F.floor(F.col(EVENT_TS) / F.lit(time_step))).cast("long")
        grouping = F.explode(F.array(F.lit(0), F.lit(1)) if self._group_columns
                             else F.array(F.lit(0))).alias(_SET)
        first = F.col(_SET) == 0
        keys = [F.when(first, F.col(REJECT)).alias(REJECT), F.col(EVENT_TYPE),
                F.when(first, step).alias(STEP),
                *(F.when(~first, F.col(c)).alias(c) for c in self._group_columns)]
        table = _to_pandas(self._events.select("*", grouping).filter(first | valid)
                           .groupBy(_SET, *keys).agg(F.count(F.lit(1)).alias(COUNT)))
        in_first = table[_SET] == 0
        self._counted = table.loc[~in_first, [EVENT_TYPE, *self._group_columns, COUNT]]
        return table.loc[in_first, [REJECT, EVENT_TYPE, STEP, COUNT]]

    def groups_and_sample(self, blocks: list[SampleBlocks], group_columns: list[str],
                          attributes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The counts of `step_counts`, and a filtering scan bringing the sampled rows."""
        if self._counted is None or group_columns != self._group_columns:
            raise ValueError("step_counts must run first, with the same group columns")
        columns = [EVENT_TYPE, EVENT_TS, EVENT_ID, *dict.fromkeys([*group_columns,
                                                                   *attributes])]
        if not blocks:
            return self._counted, pd.DataFrame(columns=columns)
        # the block test first: the reject checks then run on the sampled rows only
        sample = (self._events.filter(_in_blocks(blocks) & F.col(REJECT).isNull())
                  .select(*columns))
        return self._counted, _to_pandas(sample)


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


def _to_pandas(frame: DataFrame) -> pd.DataFrame:
    """Bring a small result to the driver through Arrow (whatever the session's setting)."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow().to_pandas()
    return frame.toPandas()
