"""Rows per event type, estimated before any pass over the events from what is cheap to know:
the files' sizes (exact row counts from Parquet footers) and the first rows of the first file.
The statistics engines use it to fix the selectivity sample's blocks before the scan, so the
sample is gathered in the same pass as the counts (docs/stats.md, "Selectivity sample").
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from cepplan.workload.model import Workload
from cepplan.workload.source_spec import reader_arguments

HEAD_BYTES = 1 << 20  # the first MiB of a text file (a Parquet file: its first batch)


def estimate_type_counts(paths: Sequence[str], workload: Workload) -> dict[str, float] | None:
    """Expected valid rows per type in `paths`: the first file's first rows' type shares times
    the rows the files hold (Parquet footers; text: size / bytes per row of those first rows).
    None when the files cannot be looked at here (remote paths, unreadable files: the scan
    reports those)."""
    from cepplan.stats.local_source import SourceError, expand_paths, read_canonical

    if any("://" in p for p in paths):
        return None
    arguments = reader_arguments(workload)
    try:
        files = expand_paths(list(paths))
        if not files:
            return None
        head = next(read_canonical(files[:1], **arguments, batch_bytes=HEAD_BYTES), None)
        if head is None or len(head) == 0:
            return None
        rows = _file_rows(files, arguments["source"]["format"], len(head))
    except (SourceError, OSError, ValueError, StopIteration):
        return None
    good = head.reject < 0
    codes = head.type_codes[good]
    per_code = np.bincount(codes[codes >= 0], minlength=len(head.type_names))
    scale = rows / len(head)
    return {str(name): float(count) * scale
            for name, count in zip(head.type_names, per_code, strict=True) if count}


def _file_rows(files: list[str], fmt: str, head_rows: int) -> float:
    """Rows in `files`: Parquet footers, or text size over the first file's bytes per row."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return float(sum(pq.ParquetFile(f).metadata.num_rows for f in files))
    head_bytes = min(HEAD_BYTES, os.path.getsize(files[0]))
    return sum(os.path.getsize(f) for f in files) * head_rows / max(head_bytes, 1)
