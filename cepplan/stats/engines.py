"""Which statistics engine measures the events, and the one call both go through.

`local` reads the files in this process with pyarrow (no JVM: fast start, bounded memory);
`spark` runs the same measurements as a Spark job (for input that outgrows one machine, or a
cluster via `--master`). `auto` picks local unless a master is given or the input is larger
than `AUTO_LOCAL_MAX_BYTES`. Both feed `collect.collect_statistics`, so `stats.json` is the
same whichever ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cepplan.errors import InputError
from cepplan.stats.collect import check_options, collect_statistics, scan_columns
from cepplan.stats.local_source import SourceError, input_bytes
from cepplan.workload.model import Workload

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ENGINES = ("auto", "local", "spark")
AUTO_LOCAL_MAX_BYTES = 2 << 30  # 2 GiB of files; above it auto runs Spark


def choose_engine(engine: str, paths: Sequence[str], *, master: str | None) -> str:
    """`local` or `spark` for the `--engine` option `engine` (see the module docstring)."""
    if engine not in ENGINES:
        raise InputError.single("--engine", "", f"must be one of {', '.join(ENGINES)}, "
                                f"got {engine!r}")
    if engine != "auto":
        return engine
    if master is not None or any("://" in p for p in paths):
        return "spark"
    try:
        size = input_bytes(paths)
    except SourceError as err:
        raise InputError.single(err.path, "", err.message) from None
    return "spark" if size > AUTO_LOCAL_MAX_BYTES else "local"


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
