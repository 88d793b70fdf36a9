"""Inputs and outputs of the in-process covering run: event files read into canonical
columns (numeric timestamps; the Spark engine reads every other case) and the output directory
`OUT/results/part-00000.jsonl` + `OUT/metrics.json`, replaced only on success."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from cepplan.errors import InputError
from cepplan.fileio import write_json_atomic
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.model import Workload


def read_event_frame(paths: list[str], workload: Workload) -> pd.DataFrame:
    """The events of the files, as the workload's `source` maps them, in canonical columns."""
    source = workload.source
    frames = []
    for path in paths:
        if source.format == "jsonl":
            frame = pd.read_json(path, lines=True)
        elif source.format == "csv":
            frame = pd.read_csv(path, header=0 if source.header else None,
                                names=None if source.header else list(source.columns))
        else:
            frame = pd.read_parquet(path)
        frames.append(frame)
    events = pd.concat(frames, ignore_index=True)
    time_column = source.time_column
    if source.time_format or not pd.api.types.is_numeric_dtype(events[time_column]):
        raise InputError.single(workload.path, "source.time_column",
                                "the in-process covering run reads numeric timestamps only")
    types = events[source.type_column] if source.type_column else source.fixed_type
    ids = (events[source.id_column].to_numpy(dtype=np.int64) if source.id_column
           else np.arange(len(events), dtype=np.int64))
    return events.assign(**{EVENT_TYPE: types, EVENT_TS: events[time_column].astype(float),
                            EVENT_ID: ids})


def write_covering_output(out: Path, results: pd.DataFrame, metrics: dict[str, Any]) -> None:
    """Write the results (one JSON object per query and window) and metrics into a staging
    directory beside `out`, then rename it over `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        (staging / "results").mkdir()
        lines = b"".join(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
                         for row in results.to_dict(orient="records"))
        (staging / "results" / "part-00000.jsonl").write_bytes(lines)
        write_json_atomic(staging / "metrics.json", metrics)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
