"""The plan's optional stages inside the Spark job, behind one object the job calls at fixed
places: contexts (`spark.contexts`) and the consumer queries (`spark.covering`). Each call
returns its input unchanged when the plan has no such stage.

Shipped in the job's runtime zip; OR-Tools is imported only when there are consumer queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from cepplan.engine_adapter.runtime.job import Job
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.spark.contexts import SparkContexts
from cepplan.engine_adapter.spark.tags import Layout
from cepplan.workload.spark_source import read_events, valid_rows


class Stages:
    """Contexts and consumer queries for one run of the Spark job."""

    def __init__(self, spark: SparkSession, job: Job, data: dict[str, Any],
                 events: Sequence[str]):
        self.covering = data.get("covering")
        present = self.covering or data.get("contexts")
        # the good rows as read (stage figures and consumer queries need untagged rows)
        self.rows = valid_rows(read_events(spark, list(events), **data["reader"])) \
            if present else None
        self.contexts = SparkContexts.of(spark, job, data, self.rows) if present else None

    def derive(self, pool: DataFrame, plan: Layout) -> tuple[DataFrame, Layout]:
        """Deriving patterns first: the pool with their complex events, the layout without
        them."""
        return self.contexts.derive(pool, plan) if self.contexts else (pool, plan)

    def push_down(self, frame: DataFrame, patterns: Sequence[PatternSpec]) -> DataFrame:
        """A level's rows before acquisition, each pattern's kept only inside its windows."""
        return self.contexts.push_down(frame, tuple(patterns)) if self.contexts else frame

    def held(self, results: DataFrame, patterns: Sequence[PatternSpec]) -> DataFrame:
        """A match frame with only the matches inside one holding of their contexts."""
        return self.contexts.held(results, list(patterns)) if self.contexts else results

    def outputs(self, outputs: list[DataFrame]) -> list[DataFrame]:
        """The match frames to write, the deriving patterns' included."""
        return self.contexts.outputs(outputs) if self.contexts else outputs

    def finish(self, metrics: dict[str, Any], out_dir: str) -> None:
        """Into the output directory being written: consumer query results; into the
        metrics: `contexts` and `covering`."""
        if self.contexts:
            self.contexts.finish(metrics)
        if self.covering:
            from cepplan.engine_adapter.spark.covering import write_covering

            write_covering(self.rows, self.covering, out_dir, metrics)
