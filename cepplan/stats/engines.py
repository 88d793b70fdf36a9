"""Which statistics engine measures the events, and the one call both go through.

`local` reads the files in this process with pyarrow (no JVM: fast start, bounded memory);
`spark` runs the same measurements as a Spark job (for input that outgrows one machine, or a
cluster via `--master`); `engine_choice.choose_engine` picks one for `--engine auto`. Both
feed `collect.collect_statistics`, so `stats.json` is the same whichever ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cepplan.stats.collect import check_options, collect_statistics, scan_columns
from cepplan.workload.model import Workload

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def measure(paths: Sequence[str], workload: Workload, *, engine: str,
            spark: SparkSession | None = None, **options: Any) -> dict[str, Any]:
    """The `stats.json` document of `paths` for `workload`, computed by `engine` (`local`, or
    `spark` on the session `spark`); `options` are those of `collect_statistics`."""
    check_options(", ".join(paths), options.get("time_step", 1.0),
                  options.get("markov_order", 1))
    columns, groups = scan_columns(workload)
    if engine == "spark":
        from cepplan.stats.spark_scan import SparkScan

        if spark is None:
            raise ValueError("the spark engine needs a SparkSession")
        scan: Any = SparkScan(spark, paths, workload, columns, groups)
    else:
        from cepplan.stats.local_scan import LocalScan

        scan = LocalScan(paths, workload, columns, groups)
    return collect_statistics(scan, paths, workload, **options)
