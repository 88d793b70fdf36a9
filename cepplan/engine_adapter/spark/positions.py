"""Each event's position in its partition (`runtime.positions`) numbered by Spark: a window
function over every good row read, before tagging keeps only the rows a pattern binds.

Shipped in the job's runtime zip.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from cepplan.engine_adapter.runtime.positions import position_column
from cepplan.workload.columns import EVENT_ID, EVENT_TS


def numbered(rows: DataFrame, keyings: Sequence[tuple[str, ...]]) -> DataFrame:
    """`rows` with one position column per partitioning: from 0 in (timestamp, id) order
    among the rows with the same key values; null where a key value is missing."""
    for keys in keyings:
        order = Window.partitionBy(*keys).orderBy(EVENT_TS, EVENT_ID)
        present = F.lit(True)
        for key in keys:
            present = present & F.col(key).isNotNull()
        rows = rows.withColumn(position_column(keys), F.when(
            present, (F.row_number().over(order) - 1).cast("double")))
    return rows
