"""Inputs and outputs of the in-process covering run (`cepplan cover`): the rows the stage
reads, through the in-process engine's reader (the Spark reader's casts and bad-row rules),
and the output directory `OUT/results/part-00000.jsonl` + `OUT/metrics.json`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.runtime.covering_run import covering_part, results_lines
from cepplan.fileio import write_bytes_atomic, write_json_atomic
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.model import Workload
from cepplan.workload.source_spec import reader_arguments


def read_covering_rows(paths: list[str], workload: Workload, section: Mapping[str, Any]
                       ) -> tuple[pd.DataFrame, int, Counter]:
    """The events of the files the covering stage reads (the consumer operators' types and
    columns), as the workload's `source` maps them, in canonical columns; the rows read and
    the rejected ones by reason."""
    parts, read, rejected = [], 0, Counter()
    for batch in read_batches(paths, **reader_arguments(workload)):
        parts.append(covering_part(batch.events, section))
        read += batch.read
        rejected.update(batch.rejected)
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=[EVENT_TYPE, EVENT_TS, EVENT_ID])
    return frame, read, rejected


def write_covering_output(out: Path, results: pd.DataFrame, metrics: dict[str, Any]) -> None:
    """Write the results and metrics into the new directory `out` (`cepplan cover` stages it
    and renames it over its output only on success)."""
    (out / "results").mkdir(parents=True)
    write_bytes_atomic(out / "results" / "part-00000.jsonl", results_lines(results))
    write_json_atomic(out / "metrics.json", metrics)
