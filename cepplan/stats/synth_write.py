"""Write a canonical event table as a workload's `source` describes: CSV, Parquet or JSON lines
with the source's column names, and string timestamps in its Spark `time_format`.

Written atomically (one file; temp + rename), so a failed run leaves no half-written data.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from cepplan.errors import InputError
from cepplan.fileio import write_bytes_atomic
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.durations import SECONDS_PER_UNIT
from cepplan.workload.model import Workload

# Spark datetime pattern letters synth can write, with their strftime codes and resolution (s).
_LETTERS = {"yyyy": ("%Y", 0), "yy": ("%y", 0), "MM": ("%m", 0), "dd": ("%d", 86400),
            "HH": ("%H", 3600), "mm": ("%M", 60), "ss": ("%S", 1), "SSS": ("%f", 0.001)}
_TOKEN = re.compile(r"'[^']*'|([A-Za-z])\1*|[^A-Za-z']+")
# zone offset letters, written as UTC in their spelling (synth's times are UTC)
_UTC = {**{"X" * n: "Z" for n in range(1, 6)}, "x": "+00", "xx": "+0000", "xxx": "+00:00",
        "xxxx": "+0000", "xxxxx": "+00:00", "Z": "+0000", "ZZ": "+0000", "ZZZ": "+0000",
        "ZZZZZ": "Z"}
EPOCH_BASE = pd.Timestamp("2024-01-01T00:00:00Z")  # formatted timestamps start here


def strftime_pattern(spark_pattern: str, file: str = "<workload>") -> tuple[str, float]:
    """A Spark datetime pattern as a strftime format plus its resolution in seconds; patterns
    with other letters are an `InputError` (synth writes only these)."""
    out, resolution = [], 86400.0
    for match in _TOKEN.finditer(spark_pattern):
        token = match.group(0)
        if token.startswith("'"):
            out.append(token[1:-1].replace("%", "%%") or "'")
        elif token in _UTC:
            out.append(_UTC[token])
        elif token[0].isalpha():
            if token not in _LETTERS:
                raise InputError.single(file, "source.time_format", f"synth cannot write "
                                        f"{token!r} in {spark_pattern!r}; it writes "
                                        f"{', '.join(_LETTERS)} and zone offsets")
            code, step = _LETTERS[token]
            out.append(code)
            resolution = min(resolution, step) if step else resolution
        else:
            out.append(token.replace("%", "%%"))
    return "".join(out), resolution


def apply_time_format(events: pd.DataFrame, workload: Workload) -> pd.DataFrame:
    """Shift times to start at `EPOCH_BASE` and truncate them to the format's resolution, so the
    table equals what the formatted file says (sorting is unchanged: the map is monotone)."""
    _, resolution = strftime_pattern(workload.source.time_format, workload.path)
    unit = SECONDS_PER_UNIT[workload.time_unit]
    seconds = EPOCH_BASE.timestamp() + events[EVENT_TS].to_numpy() * unit
    seconds = np.floor(seconds / resolution + 1e-9) * resolution
    return events.assign(**{EVENT_TS: seconds / unit})


def write_events(events: pd.DataFrame, workload: Workload, path: str | Path) -> None:
    """Write `events` (canonical columns) to `path` in the workload's source format."""
    source = workload.source
    if source is None:
        raise InputError.single(workload.path, "source", "the workload has no \"source\": "
                                "synth needs it to know the file format and column names")
    table = events.copy()
    if source.fixed_type is None:
        table = table.rename(columns={EVENT_TYPE: source.type_column})
    else:
        table = table.drop(columns=[EVENT_TYPE])
    table = table.rename(columns={EVENT_TS: source.time_column})
    if source.time_format:
        fmt, _ = strftime_pattern(source.time_format, workload.path)
        unit = SECONDS_PER_UNIT[workload.time_unit]
        table[source.time_column] = _format_times(table[source.time_column] * unit, fmt)
    if source.id_column:
        table = table.rename(columns={EVENT_ID: source.id_column})
    else:
        table = table.drop(columns=[EVENT_ID])
    if source.columns is not None and source.format == "csv" and not source.header:
        missing = [c for c in table.columns if c not in source.columns]
        if missing:
            raise InputError.single(workload.path, "source.columns", "cannot write column(s) "
                                    f"{', '.join(missing)}: they are not in \"columns\"")
        table = table.reindex(columns=list(source.columns))
    write_bytes_atomic(path, _encode(table, source.format, source.header))


def _format_times(seconds: pd.Series, fmt: str) -> pd.Series:
    """Seconds since the epoch as text; `%f` stands for Spark's `SSS` (milliseconds)."""
    millis_since_epoch = np.round(seconds.to_numpy() * 1000.0).astype(np.int64)
    stamps = pd.Series(pd.to_datetime(millis_since_epoch, unit="ms", utc=True),
                       index=seconds.index)
    millis = (stamps.dt.microsecond // 1000).astype(str).str.zfill(3)
    pieces = [stamps.dt.strftime(part) if part else None for part in fmt.split("%f")]
    text = pieces[0] if pieces[0] is not None else pd.Series("", index=seconds.index)
    for piece in pieces[1:]:
        text = text + millis + (piece if piece is not None else "")
    return text


def _encode(table: pd.DataFrame, fmt: str, header: bool) -> bytes:
    buffer = io.BytesIO()
    if fmt == "parquet":
        table.to_parquet(buffer, index=False, coerce_timestamps="us")
    elif fmt == "csv":
        table.to_csv(buffer, index=False, header=header)
    else:
        table.to_json(buffer, orient="records", lines=True, double_precision=15)
    return buffer.getvalue()
