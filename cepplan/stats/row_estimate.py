"""Rows per event type, estimated before any pass over the events from what is cheap to know:
the files' sizes (exact row counts from Parquet footers) and the first rows of the first file.
The statistics engines use it to fix the selectivity sample's blocks before the scan, so the
sample is gathered in the same pass as the counts (docs/measuring.md, "The selectivity sample").
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from cepplan.workload.model import Workload
from cepplan.workload.source_spec import reader_arguments

HEAD_BYTES = 1 << 20  # the first MiB of a text file
HEAD_ROWS = 65_536  # the first rows of a Parquet file


def estimate_type_counts(paths: Sequence[str], workload: Workload) -> dict[str, float] | None:
    """Expected rows per type in `paths`: the type shares among the first rows of the first
    file times the rows the files hold (Parquet footers; text: size / bytes per row of those
    first rows). None when the files cannot be looked at here (remote paths, unreadable
    files: the scan reports those)."""
    files = local_files(paths)
    if not files:
        return None
    source = reader_arguments(workload)["source"]
    try:
        if source["format"] == "parquet":
            shares = _parquet_head(files[0], source.get("type_column"), source.get("type"))
            rows = float(sum(_parquet_rows(f) for f in files))
        else:
            shares, head_rows = _text_head(files[0], workload)
            head_bytes = min(HEAD_BYTES, os.path.getsize(files[0]))
            rows = sum(os.path.getsize(f) for f in files) * head_rows / max(head_bytes, 1)
    except (OSError, ValueError, KeyError, StopIteration, ArithmeticError):
        return None
    return {name: share * rows for name, share in shares.items()}


def local_files(paths: Sequence[str]) -> list[str]:
    """The files `paths` name on this machine (folders expanded); none when a path is
    remote or cannot be listed (the scan itself reports those)."""
    from cepplan.sources.local_source import SourceError, expand_paths

    if any("://" in p for p in paths):
        return []
    try:
        return expand_paths(list(paths))
    except (SourceError, OSError):
        return []


def _parquet_rows(path: str) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def _parquet_head(path: str, type_column: str | None, fixed: str | None) -> dict[str, float]:
    """Type shares among the first `HEAD_ROWS` rows (the type column only)."""
    if not type_column:
        return {str(fixed): 1.0}
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    batch = next(pq.ParquetFile(path).iter_batches(batch_size=HEAD_ROWS,
                                                   columns=[type_column]))
    counted = pc.value_counts(batch.column(0)).to_pylist()
    total = sum(c["counts"] for c in counted if c["values"] is not None)
    return {str(c["values"]): c["counts"] / total for c in counted if c["values"] is not None}


def _text_head(path: str, workload: Workload) -> tuple[dict[str, float], int]:
    """Type shares among the valid rows of the first `HEAD_BYTES`, and how many rows those
    bytes hold."""
    from cepplan.sources.local_source import read_canonical

    head = next(read_canonical([path], **reader_arguments(workload), batch_bytes=HEAD_BYTES))
    codes = head.type_codes[head.reject < 0]
    per_code = np.bincount(codes[codes >= 0], minlength=len(head.type_names))
    return ({str(name): float(count / per_code.sum())
             for name, count in zip(head.type_names, per_code, strict=True) if count},
            len(head))


def head_groups(paths: Sequence[str], workload: Workload, columns: Sequence[str],
                limit: int) -> list[tuple[str | None, ...]] | None:
    """The distinct values of the text `columns` among the first rows of the first file, when
    the input is local Parquet, those columns are stored as text and hold at most `limit`
    distinct tuples; else None. A guess at the groups rows are counted by (the Spark job
    counts the rows of these groups without grouping them; any other group is counted too)."""
    files = local_files(paths) if columns and workload.source.format == "parquet" else []
    if not files:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        head = pq.ParquetFile(files[0])
        schema = head.schema_arrow
        if not all(c in schema.names and schema.field(c).type in (pa.string(),
                                                                   pa.large_string())
                   for c in columns):
            return None
        batch = next(head.iter_batches(batch_size=HEAD_ROWS, columns=list(columns)))
    except (OSError, ValueError, KeyError, StopIteration):
        return None
    distinct = pa.Table.from_batches([batch]).group_by(list(columns)).aggregate([])
    if distinct.num_rows > limit:
        return None
    return sorted(zip(*(distinct.column(c).to_pylist() for c in columns), strict=True),
                  key=lambda values: tuple((v is None, v or "") for v in values))
