"""The Spark statistics engine: the per-step table and the key counts + selectivity sample of
`scan.EventScan`, computed by Spark over `spark_source.read_events`.

Two scans (caching the parsed rows measured slower than reading them again, for Parquet and
CSV alike): rows per (reject reason, type, time step); then one aggregation giving counts per
key and region columns and, as groups of one row each, the sampled events.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cepplan.errors import InputError
from cepplan.stats.scan import COUNT, STEP, SampleBlocks
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.model import Workload
from cepplan.workload.source_spec import reader_arguments
from cepplan.workload.spark_source import REJECT, SourceError, read_events

_SAMPLED = "__sampled"  # the id of a sampled row, NULL for the others


class SparkScan:
    """`scan.EventScan` on a SparkSession; `columns` are the key / attribute columns kept."""

    engine = "spark"

    def __init__(self, spark: SparkSession, paths: Sequence[str], workload: Workload,
                 columns: Sequence[str]):
        self.versions = {"spark": spark.version}
        try:
            events = read_events(spark, list(paths), **reader_arguments(workload),
                                 positions="monotonic")
        except SourceError as err:
            raise InputError.single(err.path or ", ".join(paths), "", err.message) from None
        self._events = events.select(EVENT_TYPE, EVENT_TS, EVENT_ID, REJECT,
                                     *[c for c in columns if c in events.columns])

    def step_counts(self, time_step: float) -> pd.DataFrame:
        step = F.when(F.col(REJECT).isNull(), F.floor(F.col(EVENT_TS) / F.lit(time_step)))
        return _to_pandas(self._events.groupBy(REJECT, EVENT_TYPE, step.cast("long").alias(STEP))
                          .agg(F.count(F.lit(1)).alias(COUNT)))

    def groups_and_sample(self, blocks: list[SampleBlocks], group_columns: list[str],
                          attributes: list[str],
                          t_first: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """One aggregation over the valid rows: a sampled row is a group of its own (keyed by
        its id), so its values pass through `first`; the other rows are counted by group."""
        valid = self._events.filter(F.col(REJECT).isNull())
        wanted = F.lit(False)
        for block in blocks:
            condition = F.col(EVENT_TYPE).isin(list(block.types))
            if block.chosen is not None:
                index = F.floor((F.col(EVENT_TS) - F.lit(t_first)) / F.lit(block.length))
                condition = condition & index.cast("long").isin(list(block.chosen))
            wanted = wanted | condition
        sampled = F.when(wanted, F.col(EVENT_ID)).alias(_SAMPLED)
        attributes = [c for c in attributes if c not in group_columns]
        frame = _to_pandas(valid.groupBy(EVENT_TYPE, *group_columns, sampled).agg(
            F.count(F.lit(1)).alias(COUNT), F.first(EVENT_TS).alias(EVENT_TS),
            *(F.first(c).alias(c) for c in attributes)))
        is_sample = frame[_SAMPLED].notna()
        collected = frame[is_sample].drop(columns=[COUNT]).rename(columns={_SAMPLED: EVENT_ID})
        counted = frame.groupby([EVENT_TYPE, *group_columns], dropna=False,
                                as_index=False)[COUNT].sum()
        return counted, collected.reset_index(drop=True)


def _to_pandas(frame: DataFrame) -> pd.DataFrame:
    """Bring a small result to the driver through Arrow (whatever the session's setting)."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow().to_pandas()
    return frame.toPandas()
