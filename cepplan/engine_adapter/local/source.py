"""Read event files through a workload's `source` in batches, as the Spark reader does.

pyarrow's streaming readers give batches of raw rows; each batch becomes canonical columns
(`__type`, `__ts`, `__id`, keys, typed attributes) and a reason per unusable row, with the
reasons, their priority and the casts of `cepplan.workload.spark_source` (CSV and JSON lines
read as strings and cast like Spark's `try_cast`: blanks trimmed, "1.5" is not a long).
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from cepplan.errors import InputError
from cepplan.stats.synth_write import strftime_pattern
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, merged_attribute_types
from cepplan.workload.durations import SECONDS_PER_UNIT

# The reasons of cepplan.workload.spark_source (kept equal by tests/engine/test_local_engine.py).
REJECT_MALFORMED = "malformed row"
REJECT_TYPE_MISSING = "missing type"
REJECT_TYPE_UNKNOWN = "unknown type"
REJECT_TIME = "missing or unparsable time"
REJECT_ID = "missing or unparsable id"
BATCH_BYTES = 1 << 20  # small: the streaming CSV reader reads many blocks ahead
_JSON_SAMPLE = 1000
_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})


@dataclass
class Batch:
    """Good rows of one batch in canonical columns, and the rejected rows' reasons."""

    events: pd.DataFrame
    rejected: Counter
    read: int = 0  # rows read: good (handed over or not), rejected, malformed


def read_batches(paths: Sequence[str], source: Mapping[str, Any],
                 attributes: Mapping[str, Mapping[str, str]], time_unit: str, *,
                 batch_bytes: int = BATCH_BYTES,
                 only_types: Collection[str] | None = None) -> Iterator[Batch]:
    """The files as canonical batches; `InputError` (naming the file) when a file cannot be
    read as the source says. Row ids without an `id_column`: positions over all files.
    With `only_types`, good rows of other types are counted but not handed over (no pandas
    conversion for rows nothing reads)."""
    attr_types = merged_attribute_types(attributes.values())
    position = 0
    for path in paths:
        if not os.path.exists(path):
            raise InputError.single(path, "", "no such file or directory")
        for batch in canonical_batches(_raw_batches(path, source, attr_types, batch_bytes),
                                       path, source, attributes, time_unit, position,
                                       only_types):
            position += batch.read
            yield batch


def canonical_batches(batches: Iterator[tuple[pa.Table, int]], path: str,
                      source: Mapping[str, Any], attributes: Mapping[str, Mapping[str, str]],
                      time_unit: str, position: int = 0,
                      only_types: Collection[str] | None = None) -> Iterator[Batch]:
    """Raw batches of one input (`_raw_batches`) as canonical ones, row ids from `position`
    on (each batch's `read` advances it); also the Spark job's reader of byte ranges."""
    attr_types = merged_attribute_types(attributes.values())
    while True:
        try:
            raw, malformed = next(batches)
        except StopIteration:
            break
        except (pa.ArrowInvalid, UnicodeDecodeError) as err:
            raise InputError.single(path, "", f"cannot read as {source['format']}: "
                                    f"{str(err).splitlines()[0]}") from None
        batch = _canonical(raw, source, attributes, attr_types, time_unit, position, path,
                           only_types)
        if malformed:
            batch.rejected[REJECT_MALFORMED] += malformed
        batch.read += malformed
        position += batch.read
        yield batch



def _row_columns(source: Mapping[str, Any]) -> list[str]:
    names = [source.get("type_column"), source.get("time_column", "ts"), source.get("id_column")]
    return [n for n in names if n] + list(source.get("key_columns", ()))


def _needed(source: Mapping[str, Any], attr_types: Mapping[str, str]) -> list[str]:
    return list(dict.fromkeys(_row_columns(source) + list(attr_types)))


def _check_columns(present: Sequence[str], source: Mapping[str, Any],
                   attr_types: Mapping[str, str], path: str) -> None:
    missing = [c for c in _needed(source, attr_types) if c not in present]
    if missing:
        raise InputError.single(path, "", f"column(s) {', '.join(map(repr, missing))} not in "
                                f"the input (its columns: {', '.join(present)})")


def _raw_batches(path: str, source: Mapping[str, Any], attr_types: Mapping[str, str],
                 batch_bytes: int) -> Iterator[tuple[pa.Table, int]]:
    """(raw rows with the needed columns, malformed rows skipped in it) per batch."""
    fmt = source["format"]
    if fmt == "csv":
        yield from _csv_batches(path, source, attr_types, batch_bytes)
    elif fmt == "jsonl":
        yield from _json_batches(path, source, attr_types, batch_bytes)
    elif fmt == "parquet":
        try:
            handle = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as err:
            raise InputError.single(path, "", f"cannot read as Parquet: {err}") from None
        _check_columns(handle.schema_arrow.names, source, attr_types, path)
        for batch in handle.iter_batches(batch_size=1 << 17,
                                         columns=_needed(source, attr_types)):
            yield pa.Table.from_batches([batch]), 0
    else:
        raise InputError.single(path, "", f"unknown source format {fmt!r} "
                                "(csv, parquet or jsonl)")


def _csv_batches(path: str, source: Mapping[str, Any], attr_types: Mapping[str, str],
                 batch_bytes: int) -> Iterator[tuple[pa.Table, int]]:
    header = bool(source.get("header", True))
    if header:
        with open(path, newline="", encoding="utf-8") as handle:
            names = next(csv.reader(handle), [])
    else:
        names = list(source.get("columns") or ())
    if not names:
        raise InputError.single(path, "", "cannot find column names: the CSV input is empty "
                                "or has no header line")
    _check_columns(names, source, attr_types, path)
    bad = [0]

    def skip(_row) -> str:
        bad[0] += 1
        return "skip"

    reader = pa_csv.open_csv(
        path,
        read_options=pa_csv.ReadOptions(block_size=batch_bytes, use_threads=False,
                                        column_names=names, skip_rows=1 if header else 0),
        parse_options=pa_csv.ParseOptions(invalid_row_handler=skip),
        convert_options=pa_csv.ConvertOptions(
            column_types={n: pa.string() for n in names}, strings_can_be_null=True,
            include_columns=_needed(source, attr_types)))
    for batch in reader:
        yield pa.Table.from_batches([batch]), bad[0]
        bad[0] = 0


def _json_batches(path: str, source: Mapping[str, Any], attr_types: Mapping[str, str],
                  batch_bytes: int) -> Iterator[tuple[pa.Table, int]]:
    needed = _needed(source, attr_types)
    checked = False
    with open(path, "rb") as handle:
        while True:
            lines = handle.readlines(batch_bytes)
            if not lines:
                break
            records, bad = [], 0
            for line in lines:
                if not line.strip():
                    continue
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    record = None
                if isinstance(record, dict):
                    records.append({k: _json_text(record.get(k)) for k in needed})
                else:
                    bad += 1
            if not checked:
                _check_json_fields(lines, source, attr_types, path)
                checked = True
            columns = {k: pa.array([r[k] for r in records], pa.string()) for k in needed}
            yield pa.table(columns), bad


def _check_json_fields(lines: list[bytes], source: Mapping[str, Any],
                       attr_types: Mapping[str, str], path: str) -> None:
    """The needed fields must appear in the first lines, as the Spark reader checks."""
    seen: dict[str, None] = {}
    for line in lines[:_JSON_SAMPLE]:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            seen.update(dict.fromkeys(record))
    if not seen:
        raise InputError.single(path, "", "no JSON object in the first lines (empty input or "
                                "not JSON lines)")
    _check_columns(list(seen), source, attr_types, path)


def _json_text(value: Any) -> str | None:
    """A JSON value as Spark's string schema reads it: strings as they are, others as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return orjson.dumps(value).decode()


def _canonical(raw: pa.Table, source: Mapping[str, Any],
               attributes: Mapping[str, Mapping[str, str]], attr_types: Mapping[str, str],
               time_unit: str, position: int, path: str,
               only_types: Collection[str] | None = None) -> Batch:
    """Canonical columns and the first reason (spark_source's priority) each row is unusable;
    computed with Arrow kernels, the good rows handed over as pandas (types categorical)."""
    n = raw.num_rows
    type_col = source.get("type_column")
    types = (_as_string(raw[type_col]) if type_col
             else pa.array([source["type"]] * n, pa.string()))
    out = {EVENT_TYPE: types,
           EVENT_TS: _time(raw[source.get("time_column", "ts")], source, time_unit, path)}
    if source.get("id_column"):
        out[EVENT_ID] = _cast(raw[source["id_column"]], "long")
    else:
        out[EVENT_ID] = pa.array(np.arange(position, position + n, dtype=np.int64))
    keys = [k for k in source.get("key_columns", ()) if k not in attr_types]
    for key in keys:
        out[key] = _as_string(raw[key])
    for attr, kind in attr_types.items():
        out[attr] = _cast(raw[attr], kind)
    codes = pc.index_in(_contiguous(types),
                        value_set=pa.array(list(attributes), pa.string()))
    reasons = _reasons(raw, out, source, attributes, keys, codes)
    bad = ~pd.isna(reasons)
    rejected = Counter(reasons[bad].tolist())
    out[EVENT_TYPE] = pa.DictionaryArray.from_arrays(
        codes, pa.array(list(attributes), pa.string()))  # pandas: categorical, fixed categories
    table = pa.table(out)
    wanted = ~bad
    if only_types is not None:
        wanted &= np.isin(np.asarray(pc.fill_null(codes, -1)),
                          [i for i, t in enumerate(attributes) if t in only_types])
    if not wanted.all():
        table = table.filter(pa.array(wanted))
    good = table.to_pandas()
    return Batch(good, rejected, n)


def _contiguous(values) -> pa.Array:
    """One array for a chunked one: `DictionaryArray.from_arrays` would iterate a chunked
    array value by value."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _null(column) -> np.ndarray:
    return np.asarray(pc.is_null(column, nan_is_null=False))


def _reasons(raw: pa.Table, out: Mapping[str, Any], source: Mapping[str, Any],
             attributes: Mapping[str, Mapping[str, str]], keys: list[str],
             codes: pa.Array) -> np.ndarray:
    """Per row the first reason found (None: a good row), in the order of
    `spark_source._reject_column`; `codes`: each row's type as its index in `attributes`."""
    types = out[EVENT_TYPE]
    checks: list[tuple[np.ndarray, str]] = [
        (_null(types), REJECT_TYPE_MISSING),
        (_null(codes), REJECT_TYPE_UNKNOWN),
        (_null(out[EVENT_TS]), REJECT_TIME)]
    if source.get("id_column"):
        checks.append((_null(out[EVENT_ID]), REJECT_ID))
    for key in keys:
        checks.append((_null(out[key]), f"missing key {key!r}"))
    reasons = np.full(raw.num_rows, None, dtype=object)
    type_index = np.asarray(pc.fill_null(codes, -1))
    by_schema: dict[tuple[str, ...], list[int]] = {}
    for index, attrs in enumerate(attributes.values()):
        by_schema.setdefault(tuple(sorted(attrs)), []).append(index)
    for names, indices in by_schema.items():
        rows = np.isin(type_index, indices)
        if not names or not rows.any():
            continue
        for name in reversed(names):
            missing = _null(raw[name])
            reasons[rows & _null(out[name]) & ~missing] = f"unparsable attribute {name!r}"
            reasons[rows & missing] = f"missing attribute {name!r}"
    for mask, reason in reversed(checks):
        reasons[mask] = reason
    return reasons


def _as_string(values) -> pa.Array:
    """Strings (numbers from Parquet as their text), missing values null."""
    return pc.cast(values, pa.string())


_DOUBLE = r"^[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|(?i:inf|infinity|nan))$"
_LONG = r"^[+-]?\d+$"


def _cast(values, kind: str) -> pa.Array:
    """Spark's `try_cast` to a workload type: blanks trimmed, unparsable values null."""
    if kind == "string":
        return _as_string(values)
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        fast = _plain_numbers(values, kind)
        if fast is not None:
            return fast
        text = pc.utf8_trim_whitespace(values)
        if kind == "bool":
            lower = pc.utf8_lower(text)
            truth = pc.is_in(lower, pa.array(sorted(_TRUE)))
            known = pc.or_(truth, pc.is_in(lower, pa.array(sorted(_FALSE))))
            return pc.if_else(known, truth, pa.scalar(None, pa.bool_()))
        valid = pc.match_substring_regex(text, _LONG if kind == "long" else _DOUBLE)
        text = pc.if_else(valid, text, pa.scalar(None, pa.string()))
        return pc.cast(text, pa.int64() if kind == "long" else pa.float64())
    if kind == "bool":
        return pc.cast(values, pa.bool_())
    if kind == "long" and pa.types.is_floating(values.type):
        whole = pc.equal(values, pc.floor(values))
        return pc.cast(pc.if_else(whole, values, pa.scalar(None, values.type)), pa.int64())
    return pc.cast(values, pa.int64() if kind == "long" else pa.float64())


def _plain_numbers(values, kind: str) -> pa.Array | None:
    """The common case cheaply: every value already a number Arrow's cast reads, in the syntax
    `try_cast` accepts (Arrow reads a subset of `_DOUBLE`, and of `_LONG` but hexadecimal);
    None when some value needs the trimming and checking path."""
    if kind not in ("double", "long"):
        return None
    if kind == "long" and pc.any(pc.match_substring(values, "x", ignore_case=True)).as_py():
        return None
    try:
        return pc.cast(values, pa.int64() if kind == "long" else pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _time(values, source: Mapping[str, Any], time_unit: str, path: str) -> pa.Array:
    """Timestamps as float in `time_unit`; formatted strings parsed with the workload's Spark
    datetime pattern translated to strptime; unparsable or infinite values null."""
    per_unit = SECONDS_PER_UNIT[time_unit]
    if source.get("time_format"):
        try:
            fmt, _ = strftime_pattern(source["time_format"], path)
        except InputError:
            raise InputError.single(path, "source.time_format", "the in-process engine reads "
                                    "only the pattern letters yyyy yy MM dd HH mm ss SSS in "
                                    f"{source['time_format']!r}; use --engine spark") from None
        parsed = pc.strptime(_as_string(values), format=fmt, unit="us", error_is_null=True)
        seconds = pc.divide(pc.cast(pc.cast(parsed, pa.int64()), pa.float64()), 1e6)
    elif pa.types.is_timestamp(values.type):
        micros = pc.cast(pc.cast(values, pa.timestamp("us")), pa.int64())
        seconds = pc.divide(pc.cast(micros, pa.float64()), 1e6)
    elif pa.types.is_date(values.type):
        days = pc.cast(pc.cast(values, pa.date32()), pa.int32())
        seconds = pc.multiply(pc.cast(days, pa.float64()), 86400.0)
    else:
        seconds = _cast(values, "double")
        per_unit = 1.0
    value = pc.divide(seconds, per_unit) if per_unit != 1.0 else seconds
    finite = pc.is_finite(value)
    return pc.if_else(finite, value, pa.scalar(None, pa.float64()))
