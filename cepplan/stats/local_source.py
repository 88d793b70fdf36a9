"""Read event files through a workload's `source` with pyarrow, batch by batch, into the
canonical columns of `cepplan.workload.spark_source.read_events` (no JVM).

Same plain arguments, same columns (`__type`, `__ts`, `__id`, non-attribute keys as strings,
one column per attribute name, `__reject`), same reject reasons in the same priority and the
same casts as Spark's `try_cast` (checked side by side in tests/stats/test_local_vs_spark.py):

    for batch in read_batches(["events.csv"], source, {"GOOG": {"peak": "double"}}, "min"):
        ...  # a pandas DataFrame per batch

`__type` and `__reject` are pandas Categoricals (cheap to group by), the attributes float64,
Int64, boolean or object (str) by their declared type.

Imports only pyarrow, pandas, numpy, orjson and stdlib modules of cepplan, so the local path
starts fast. Known departures from Spark, on inputs a CEP file rarely holds: CSV fields quoted
over several lines are read as one field (Spark reads line by line); hexadecimal floats are
unparsable; a non-string Parquet column read as a string formats doubles Python's way.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, merged_attribute_types
from cepplan.workload.durations import SECONDS_PER_UNIT

# The reasons of spark_source.py, word for word (a test holds them equal).
REJECT = "__reject"
REJECT_MALFORMED = "malformed row"
REJECT_TYPE_MISSING = "missing type"
REJECT_TYPE_UNKNOWN = "unknown type"
REJECT_TIME = "missing or unparsable time"
MAX_TIME = 1e17  # largest |timestamp| in time units, as in spark_source; larger is unusable
REJECT_ID = "missing or unparsable id"

BATCH_BYTES = 16 << 20  # CSV / JSON lines block; Parquet batches of BATCH_ROWS
BATCH_ROWS = 256_000
_HEADER_SAMPLE = 1000  # JSON lines: columns are taken from this many first lines, as Spark does


class SourceError(ValueError):
    """The files cannot be read as the source describes (as `spark_source.SourceError`)."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path


def expand_paths(paths: str | Sequence[str]) -> list[str]:
    """Files to read: files as given, directories as their non-hidden files (sorted; names
    starting with `.` or `_` skipped, as Spark does), globs expanded."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    if not paths:
        raise SourceError("no input files given")
    files: list[str] = []
    for path in paths:
        matches = sorted(glob.glob(path)) if any(c in path for c in "*?[") else [path]
        if not matches or not all(os.path.exists(m) for m in matches):
            raise SourceError("no such file or directory", path)
        for match in matches:
            if os.path.isdir(match):
                files += [os.path.join(root, name)
                          for root, dirs, names in sorted(os.walk(match))
                          for name in sorted(names) if not name.startswith((".", "_"))
                          if not any(d.startswith((".", "_")) for d in
                                     os.path.relpath(root, match).split(os.sep) if d != ".")]
            else:
                files.append(match)
    return files


def input_bytes(paths: str | Sequence[str]) -> int:
    """Total size of the files `read_batches` would read."""
    return sum(os.path.getsize(f) for f in expand_paths(paths))



def read_batches(paths: str | Sequence[str], source: Mapping[str, Any],
                 attributes: Mapping[str, Mapping[str, str]], time_unit: str, *,
                 columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
    """Yield the canonical columns of `paths` batch by batch (file order; ids are the row's
    0-based position over all files unless `id_column`). `columns` limits the key / attribute
    columns returned (all are still read: every attribute of a row's type is checked)."""
    if time_unit not in SECONDS_PER_UNIT:
        raise SourceError(f"unknown time_unit {time_unit!r}")
    files = expand_paths(paths)
    attr_types = merged_attribute_types(attributes.values())
    keys = [k for k in source.get("key_columns", ()) if k not in attr_types]
    needed = list(dict.fromkeys(_row_columns(source) + list(attr_types)))
    raw_batches = _raw_batches(files, source, needed)
    time_parser = _time_parser(source.get("time_format"), time_unit)
    for raw, malformed, positions in raw_batches:
        yield _canonical(raw, malformed, source, attributes, attr_types, keys, time_parser,
                         time_unit, positions, columns)


def _row_columns(source: Mapping[str, Any]) -> list[str]:
    """Columns every row needs: type, time, id and keys."""
    names = [source.get("type_column"), source.get("time_column", "ts"), source.get("id_column")]
    return [n for n in names if n] + list(source.get("key_columns", ()))


# ---- raw batches per format: (needed columns, malformed-row mask, row positions) ----

def _raw_batches(files: list[str], source: Mapping[str, Any],
                 needed: list[str]) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    fmt = source["format"]
    if fmt == "csv":
        return _csv_batches(files, source, needed)
    if fmt == "jsonl":
        return _json_batches(files, source, needed)
    if fmt == "parquet":
        return _parquet_batches(files, needed)
    raise SourceError(f"unknown source format {fmt!r} (csv, parquet or jsonl)")


def _missing(needed: list[str], present: Sequence[str], files: list[str]) -> None:
    missing = [c for c in needed if c not in present]
    if missing:
        raise SourceError(f"column(s) {', '.join(map(repr, missing))} not in the input "
                          f"(its columns: {', '.join(present)})", ", ".join(files))


def _csv_header(files: list[str], source: Mapping[str, Any]) -> list[str]:
    """Column names: the first file's header line (as Spark takes them), or `columns`."""
    if not source.get("header", True):
        return list(source.get("columns") or ())
    for file in files:
        with open(file, newline="", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    return next(csv.reader(io.StringIO(line), escapechar="\\",
                                           doublequote=False))
    return []


def _csv_batches(files: list[str], source: Mapping[str, Any],
                 needed: list[str]) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    """CSV as strings like Spark's PERMISSIVE reader: a row with too few or too many fields is
    malformed (and keeps its position), blank lines are skipped, empty fields are NULL,
    backslash escapes quotes."""
    names = _csv_header(files, source)
    if not names:
        raise SourceError("cannot find column names: the CSV input is empty or has no "
                          "header line")
    _missing(needed, names, files)
    header = int(bool(source.get("header", True)))
    offset = 0
    for file in files:
        bad: list[int] = []  # positions in the file of malformed rows not yet emitted

        def invalid(row: Any, bad: list[int] = bad) -> str:
            if row.text.strip():  # row.number counts non-blank lines from 1, header included
                bad.append(row.number - 1 - header)
            return "skip"

        reader = pa_csv.open_csv(
            file,
            read_options=pa_csv.ReadOptions(column_names=names, skip_rows=header,
                                            use_threads=False, block_size=BATCH_BYTES),
            parse_options=pa_csv.ParseOptions(escape_char="\\", double_quote=False,
                                              invalid_row_handler=invalid),
            convert_options=pa_csv.ConvertOptions(
                include_columns=needed, column_types={n: pa.string() for n in needed},
                strings_can_be_null=True, null_values=[""], quoted_strings_can_be_null=True))
        position = 0
        for batch in reader:
            end, taken = position + batch.num_rows, 0
            while taken < len(bad) and bad[taken] < end:  # interleave the malformed rows
                end, taken = end + 1, taken + 1
            yield _with_malformed(pa.Table.from_batches([batch]), bad[:taken], position, end,
                                  needed, offset)
            del bad[:taken]
            position = end
        if bad:
            yield _with_malformed(pa.table({n: pa.array([], pa.string()) for n in needed}), bad,
                                  position, bad[-1] + 1, needed, offset)
            position = bad[-1] + 1
        offset += position


def _with_malformed(good: pa.Table, malformed: list[int], start: int, end: int,
                    needed: list[str], offset: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Good rows and NULL rows standing for the malformed ones, with their positions: the
    malformed rows' own, the good rows' the others of [start, end) in order."""
    span = np.arange(start, end, dtype=np.int64)
    is_bad = np.isin(span, np.asarray(malformed, dtype=np.int64))
    nulls = pa.table({n: pa.nulls(len(malformed), pa.string()) for n in needed})
    table = pa.concat_tables([good.select(needed), nulls])
    flags = np.concatenate([np.zeros(good.num_rows, bool), np.ones(len(malformed), bool)])
    return table, flags, offset + np.concatenate([span[~is_bad], span[is_bad]])


def _json_text(value: Any) -> str | None:
    """A JSON value as the string Spark's JSON reader gives a string column."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return orjson.dumps(value).decode()


def _json_batches(files: list[str], source: Mapping[str, Any],
                  needed: list[str]) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    """JSON lines: the columns are the fields of the first lines (each needed one must be
    there, as in Spark); a line that is not a JSON object is malformed; blank lines skipped."""
    seen = _json_fields(files)
    for column in _row_columns(source):
        if column not in seen:
            raise SourceError(f"column {column!r} is not in the input (not found in its first "
                              f"{_HEADER_SAMPLE} lines; present: {', '.join(list(seen)[:20])})")
    _missing(needed, list(seen), files)
    offset = 0
    for file in files:
        with open(file, "rb") as handle:
            while True:
                lines = handle.readlines(BATCH_BYTES)
                if not lines:
                    break
                values: dict[str, list] = {n: [] for n in needed}
                malformed: list[bool] = []
                for line in lines:
                    if not line.strip():
                        continue
                    record = _json_record(line)
                    malformed.append(record is None)
                    for name in needed:
                        values[name].append(None if record is None
                                            else _json_text(record.get(name)))
                yield (pa.table({n: pa.array(v, pa.string()) for n, v in values.items()}),
                       np.array(malformed, dtype=bool),
                       np.arange(offset, offset + len(malformed), dtype=np.int64))
                offset += len(malformed)


def _json_record(line: bytes) -> dict | None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:  # integers beyond 64 bits, which orjson refuses
            record = json.loads(line)
        except ValueError:
            return None
    return record if isinstance(record, dict) else None


def _json_fields(files: list[str]) -> dict[str, None]:
    seen: dict[str, None] = {}
    lines = 0
    for file in files:
        with open(file, "rb") as handle:
            for line in handle:
                if lines >= _HEADER_SAMPLE:
                    break
                lines += 1
                record = _json_record(line) if line.strip() else None
                if record is not None:
                    seen.update(dict.fromkeys(record))
    if not seen:
        raise SourceError("no JSON object in the first lines (empty input or not JSON lines)",
                          ", ".join(files))
    return seen


def _parquet_batches(files: list[str],
                     needed: list[str]) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    offset = 0
    for file in files:
        reader = pq.ParquetFile(file)
        _missing(needed, reader.schema_arrow.names, [file])
        for batch in reader.iter_batches(batch_size=BATCH_ROWS, columns=needed):
            table = pa.Table.from_batches([batch])
            yield (table, np.zeros(len(table), dtype=bool),
                   np.arange(offset, offset + len(table), dtype=np.int64))
            offset += len(table)


# ---- casts with Spark's try_cast semantics ----

_DOUBLE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?$")
_SPECIAL = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
            "-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan, "+nan": math.nan,
            "-nan": math.nan}
_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}
_INT64 = 2 ** 63


def _strip(array: pa.Array) -> pa.Array:
    """Java's trim: whitespace and control characters at both ends."""
    return pc.utf8_trim(array, characters="".join(chr(c) for c in range(33)))


def _string_to_double(array: pa.Array) -> np.ndarray:
    text = _strip(array)
    out = np.full(len(text), np.nan)
    valid = np.zeros(len(text), dtype=bool)
    good = pc.fill_null(pc.match_substring_regex(text, _DOUBLE.pattern), False)
    good_np = good.to_numpy(zero_copy_only=False)
    if good_np.any():
        numbers = pc.utf8_rtrim(pc.filter(text, good), characters="dDfF")
        out[good_np] = pc.cast(numbers, pa.float64()).to_numpy(zero_copy_only=False)
        valid |= good_np
    rest = np.flatnonzero(~good_np & ~pc.is_null(text).to_numpy(zero_copy_only=False))
    for index in rest:  # the special literals, case-insensitive, as Spark's cast
        value = _SPECIAL.get(text[int(index)].as_py().lower())
        if value is not None:
            out[index], valid[index] = value, True
    return np.where(valid, out, np.nan), valid


def _string_to_long(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    text = _strip(array)
    good = pc.fill_null(pc.match_substring_regex(text, r"^[+-]?\d{1,19}$"), False)
    good_np = good.to_numpy(zero_copy_only=False)
    out = np.zeros(len(text), dtype=np.int64)
    if good_np.any():
        digits = pc.filter(text, good)
        long_ones = pc.greater_equal(pc.utf8_length(digits), 19).to_numpy(zero_copy_only=False)
        if long_ones.any():  # near the int64 limit: check in Python, few values
            checked = np.array([-_INT64 <= int(v) < _INT64 for v in
                                np.asarray(digits.to_pylist(), dtype=object)[long_ones]])
            keep = np.ones(len(digits), dtype=bool)
            keep[np.flatnonzero(long_ones)[~checked]] = False
            good_np[np.flatnonzero(good_np)[~keep]] = False
            digits = pc.filter(digits, pa.array(keep))
        out[good_np] = pc.cast(pc.utf8_ltrim(digits, characters="+"),
                               pa.int64()).to_numpy(zero_copy_only=False)
    return out, good_np


def _string_to_bool(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    text = pc.utf8_lower(_strip(array))
    true = pc.fill_null(pc.is_in(text, pa.array(sorted(_TRUE))), False)
    false = pc.fill_null(pc.is_in(text, pa.array(sorted(_FALSE))), False)
    true_np = true.to_numpy(zero_copy_only=False)
    return true_np, true_np | false.to_numpy(zero_copy_only=False)


def _float_to_long(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Truncation toward zero; NaN, infinities and out-of-range values are NULL."""
    ok = np.isfinite(values) & (values >= -(2.0 ** 63)) & (values < 2.0 ** 63)
    return np.where(ok, np.trunc(np.where(ok, values, 0)), 0).astype(np.int64), ok


def cast_column(array: pa.ChunkedArray | pa.Array, kind: str) -> tuple[pd.Series, np.ndarray]:
    """`array` as the workload type `kind` (double, long, bool, string) with Spark's try_cast
    rules, and which values are not NULL (a value that cannot be cast is NULL; NaN is a
    double). Nullable pandas dtypes for long and bool (Int64, boolean)."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    present = ~pc.is_null(array).to_numpy(zero_copy_only=False)
    typ = array.type
    if kind == "string":
        return pd.Series(_as_string(array), dtype=object), present
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        if kind == "double":
            values, ok = _string_to_double(array)
        elif kind == "long":
            values, ok = _string_to_long(array)
        else:
            values, ok = _string_to_bool(array)
    elif pa.types.is_boolean(typ):
        values = array.to_numpy(zero_copy_only=False).astype(bool, copy=False) & present
        ok = present
        values = values.astype(float if kind == "double" else np.int64 if kind == "long"
                               else bool)
    elif pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        numbers = pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False)
        if kind == "double":
            values, ok = numbers, present
        elif kind == "long":
            if pa.types.is_integer(typ):
                values = pc.cast(pc.fill_null(array, 0), pa.int64()).to_numpy(
                    zero_copy_only=False)
                ok = present
            else:
                values, ok = _float_to_long(numbers)
                ok &= present
        else:
            values, ok = numbers != 0, present
    else:
        values, ok = cast_column(pa.array(_as_string(array), pa.string()), kind)
        return values, ok & present
    ok = ok & present
    if kind == "double":
        return pd.Series(np.where(ok, values, np.nan), dtype=np.float64), ok
    dtype = "Int64" if kind == "long" else "boolean"
    return pd.Series(pd.array(values, dtype=dtype)).mask(~ok), ok


def _as_string(array: pa.Array) -> np.ndarray:
    """Values as Spark's cast to string gives them (booleans `true`/`false`)."""
    typ = array.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return array.to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(typ):
        return np.array([None if v is None else ("true" if v else "false")
                         for v in array.to_pylist()], dtype=object)
    return pc.cast(array, pa.string()).to_numpy(zero_copy_only=False)


# ---- time ----

_TIME_LETTERS = {"yyyy": ("year", "4,10"), "yy": ("year2", "2"), "MM": ("month", "2"),
                 "dd": ("day", "2"), "HH": ("hour", "2"), "mm": ("minute", "2"),
                 "ss": ("second", "2")}
_TOKEN = re.compile(r"'[^']*'|([A-Za-z])\1*|[^A-Za-z']+")
_NEVER = r"\b\B"  # matches nothing


def time_format_regex(pattern: str) -> str:
    """A Spark datetime pattern as a regular expression with one named group per field, read
    as Spark's parser reads it: fixed two-digit fields, `yyyy` taking 4 to 10 digits less those
    of the numeric fields right after it (so a digit literal after such a run never parses;
    years above 9999 are refused when the fields are checked), fractions `S..` 1 to n digits.
    Supported letters: yyyy yy MM dd HH mm ss S and quoted or punctuation literals; others
    raise `SourceError`."""
    out: list[str] = []
    open_year = False  # inside a numeric run that began with the variable-width year
    for match in _TOKEN.finditer(pattern):
        token = match.group(0)
        literal = token[1:-1] or "'" if token.startswith("'") else (
            token if not token[0].isalpha() else None)
        if literal is not None:
            if open_year and literal[:1].isdigit():
                return _NEVER
            open_year = False
            out.append(re.escape(literal))
        elif token[0] == "S":
            out.append(f"(?P<fraction>\\d{{1,{len(token)}}})")
        elif token in _TIME_LETTERS:
            name, width = _TIME_LETTERS[token]
            open_year = open_year or name == "year"
            out.append(f"(?P<{name}>\\d{{{width}}})")
        else:
            raise SourceError(f"time_format {pattern!r}: the local engine reads the letters "
                              "yyyy yy MM dd HH mm ss S and quoted text; for "
                              f"{token!r} use --engine spark")
    return "^" + "".join(out) + "$"


def _time_parser(pattern: str | None, time_unit: str):
    if pattern is None:
        return None
    regex = time_format_regex(pattern)
    per_unit = SECONDS_PER_UNIT[time_unit]

    def parse(array: pa.Array) -> np.ndarray:
        """Micros since the epoch (UTC) / (1e6 * unit), NaN where it does not parse or names
        no real date (Spark's strict resolver)."""
        text = array if pa.types.is_string(array.type) else pa.array(_as_string(array),
                                                                       pa.string())
        if regex == _NEVER:
            return np.full(len(text), np.nan)
        fields = pc.extract_regex(text, regex)
        valid = ~pc.is_null(fields).to_numpy(zero_copy_only=False)
        n = len(text)

        def part(name: str, default: int) -> np.ndarray:
            if fields.type.get_field_index(name) < 0:
                return np.full(n, default, dtype=np.int64)
            column = pc.struct_field(fields, name)
            return pc.cast(pc.fill_null(column, "0"), pa.int64()).to_numpy(
                zero_copy_only=False)

        year = (part("year", 1970) if fields.type.get_field_index("year2") < 0
                else 2000 + part("year2", 0))
        month, day = part("month", 1), part("day", 1)
        hour, minute, second = part("hour", 0), part("minute", 0), part("second", 0)
        micros = np.zeros(n, dtype=np.int64)
        if fields.type.get_field_index("fraction") >= 0:
            digits = pc.fill_null(pc.struct_field(fields, "fraction"), "0")
            width = pc.utf8_length(digits).to_numpy(zero_copy_only=False).astype(np.int64)
            value = pc.cast(digits, pa.int64()).to_numpy(zero_copy_only=False)
            micros = np.where(width <= 6, value * 10 ** np.clip(6 - width, 0, 6),
                              value // 10 ** np.clip(width - 6, 0, 3))
        valid &= (year <= 9999) & (month >= 1) & (month <= 12)
        valid &= (hour <= 23) & (minute <= 59) & (second <= 59)
        valid &= (day >= 1) & (day <= _days_in_month(year, np.clip(month, 1, 12)))
        days = _days_from_civil(year, np.clip(month, 1, 12), np.clip(day, 1, 31))
        total = ((days * 86400 + hour * 3600 + minute * 60 + second) * 1_000_000 + micros)
        return np.where(valid, total / (1e6 * per_unit), np.nan)

    return parse


def _days_in_month(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    lengths = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[month - 1]
    return lengths + ((month == 2) & leap)


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y = year - (month <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _time_values(column: pa.Array, parser, time_unit: str) -> np.ndarray:
    """Times as float in `time_unit` (NaN: missing, unparsable or not finite)."""
    per_unit = SECONDS_PER_UNIT[time_unit]
    typ = column.type
    if parser is not None:
        values = parser(column)
    elif pa.types.is_timestamp(typ):
        micros = pc.cast(column, pa.timestamp("us", tz=typ.tz), safe=False).cast(pa.int64())
        values = pc.cast(micros, pa.float64()).to_numpy(zero_copy_only=False) / (1e6 * per_unit)
    elif pa.types.is_date(typ):
        days = pc.cast(pc.cast(column, pa.date32()), pa.int32())
        values = pc.cast(days, pa.float64()).to_numpy(zero_copy_only=False) * (86400.0 / per_unit)
    else:
        values = cast_column(column, "double")[0].to_numpy()
    values = np.where(pc.is_null(column).to_numpy(zero_copy_only=False), np.nan, values)
    return np.where(np.isfinite(values), values, np.nan)


# ---- canonical frame and reject reasons ----

def _canonical(raw: pa.Table, malformed: np.ndarray, source: Mapping[str, Any],
               attributes: Mapping[str, Mapping[str, str]], attr_types: Mapping[str, str],
               keys: list[str], parser, time_unit: str, positions: np.ndarray,
               columns: Sequence[str] | None) -> pd.DataFrame:
    n = len(raw)
    type_column = source.get("type_column")
    if type_column:
        column = raw.column(type_column).combine_chunks()
        if not pa.types.is_string(column.type):
            column = pa.array(_as_string(column), pa.string())
        types = pd.Series(pc.dictionary_encode(column).to_pandas())
    else:
        types = pd.Series(pd.Categorical.from_codes(np.zeros(n, dtype=np.int8),
                                                    [source["type"]]))
    ts = _time_values(raw.column(source.get("time_column", "ts")).combine_chunks(), parser,
                      time_unit)
    if source.get("id_column"):
        ids = cast_column(raw.column(source["id_column"]), "long")[0]
    else:
        ids = pd.Series(positions)
    out: dict[str, Any] = {EVENT_TYPE: types, EVENT_TS: ts, EVENT_ID: ids}
    key_values = {k: pd.Series(_as_string(raw.column(k).combine_chunks()), dtype=object)
                  for k in keys}
    cast = {a: cast_column(raw.column(a), kind) for a, kind in attr_types.items()}
    reject = _reasons(raw, malformed, source, attributes, types, ts, ids, key_values,
                      {a: ok for a, (_, ok) in cast.items()})
    wanted = None if columns is None else set(columns)
    out.update({k: v for k, v in key_values.items() if wanted is None or k in wanted})
    out.update({a: v for a, (v, _) in cast.items() if wanted is None or a in wanted})
    frame = pd.DataFrame(out)
    frame[REJECT] = reject
    return frame


def _reasons(raw: pa.Table, malformed: np.ndarray, source: Mapping[str, Any],
             attributes: Mapping[str, Mapping[str, str]], types: pd.Series, ts: np.ndarray,
             ids: pd.Series, key_values: Mapping[str, pd.Series],
             parsed: Mapping[str, np.ndarray]) -> pd.Categorical:
    """The first reason each row is unusable, in spark_source's priority, else NULL."""
    n = len(raw)
    code = np.full(n, -1, dtype=np.int16)
    texts: list[str] = []

    def mark(mask: np.ndarray, text: str) -> None:
        free = mask & (code < 0)
        if free.any():
            code[free] = len(texts)
            texts.append(text)

    mark(malformed, REJECT_MALFORMED)
    type_codes = types.cat.codes.to_numpy()
    type_missing = type_codes < 0
    mark(type_missing, REJECT_TYPE_MISSING)
    known = np.isin(types.cat.categories.to_numpy(dtype=object), list(attributes))
    mark(~type_missing & ~known[type_codes], REJECT_TYPE_UNKNOWN)
    mark(np.isnan(ts) | (np.abs(ts) > MAX_TIME), REJECT_TIME)  # as spark_source's MAX_TIME
    if source.get("id_column"):
        mark(ids.isna().to_numpy(), REJECT_ID)
    for key, values in key_values.items():
        mark(values.isna().to_numpy(), f"missing key {key!r}")
    by_schema: dict[tuple, list[str]] = {}
    for type_name, attrs in attributes.items():
        by_schema.setdefault(tuple(sorted(attrs)), []).append(type_name)
    categories = types.cat.categories.to_numpy(dtype=object)
    for names, type_names in by_schema.items():
        rows = ~type_missing & np.isin(categories, type_names)[type_codes]
        for name in names:
            absent = pc.is_null(raw.column(name)).to_numpy(zero_copy_only=False)
            mark(rows & absent, f"missing attribute {name!r}")
            mark(rows & ~parsed[name], f"unparsable attribute {name!r}")
    return pd.Categorical.from_codes(code, texts)
