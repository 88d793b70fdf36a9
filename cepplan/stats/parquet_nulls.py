"""Columns that Parquet footers prove hold no NULL: every row group of every file records a
null count of 0 for them. The Spark statistics job then leaves their NULL checks out of the
reject reason, so its counting scan reads only the columns it counts by (docs/measuring.md,
"The cost of measuring").
"""

from __future__ import annotations

from collections.abc import Sequence

from cepplan.stats.row_estimate import local_files
from cepplan.workload.model import Workload


def columns_without_nulls(paths: Sequence[str], workload: Workload) -> set[str]:
    """Top-level columns with a recorded null count of 0 in every row group of every file of
    `paths`; empty unless the source is Parquet on this machine (remote paths, unreadable
    files, footers without null counts prove nothing)."""
    files = local_files(paths) if workload.source.format == "parquet" else []
    proven: set[str] | None = None
    try:
        for path in files:
            columns = _file_columns_without_nulls(path)
            proven = columns if proven is None else proven & columns
    except (OSError, ValueError):
        return set()
    return proven or set()


def _file_columns_without_nulls(path: str) -> set[str]:
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).metadata
    flat = {metadata.schema.column(j).path: metadata.schema.column(j).name
            for j in range(metadata.num_columns)}
    proven = {path for path, name in flat.items() if path == name}  # no nested columns
    for index in range(metadata.num_row_groups):
        group = metadata.row_group(index)
        for j in range(group.num_columns):
            chunk = group.column(j)
            stats = chunk.statistics
            if stats is None or not stats.has_null_count or stats.null_count != 0:
                proven.discard(chunk.path_in_schema)
    return proven
