"""The SparkSession the statistics job runs in (CLI and benchmark): UTC session time zone, so
formatted timestamps mean the same everywhere; Arrow for the small tables brought to the driver."""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession


def stats_session(master: str = "local[*]", *, driver_memory: str = "4g",
                  console_progress: bool = False, shuffle_partitions: int = 0) -> SparkSession:
    """Start (or reuse) a session for the statistics job. The job's aggregates are small, so
    `shuffle_partitions` 0 means 4 per core (Spark's 200 cost more in task overhead locally)."""
    session = (SparkSession.builder.master(master).appName("cepplan-stats")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.driver.memory", driver_memory)
               .config("spark.ui.showConsoleProgress", str(console_progress).lower())
               .config("spark.ui.enabled", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.CRITICAL)  # Ctrl-C mid-call: our one line only
    partitions = shuffle_partitions or 4 * session.sparkContext.defaultParallelism
    session.conf.set("spark.sql.shuffle.partitions", str(partitions))
    return session
