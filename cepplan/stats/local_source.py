"""Read event files through a workload's `source` with pyarrow, batch by batch, into the
canonical columns of `cepplan.workload.spark_source.read_events` (no JVM): the one in-process
reader, used by the statistics engine (`read_batches`, pandas) and the in-process engine
(`read_canonical`, NumPy, via `engine_adapter/local/source.py`).

Same plain arguments, same columns (`__type`, `__ts`, `__id`, non-attribute keys as strings,
one column per attribute name, `__reject`), same reject reasons in the same priority and the
same casts as Spark's `try_cast` (checked side by side in tests/stats/test_local_vs_spark.py):

    for batch in read_batches(["events.csv"], source, {"GOOG": {"peak": "double"}}, "min"):
        ...  # a pandas DataFrame per batch

`__type` and `__reject` are pandas Categoricals (cheap to group by), the attributes float64,
Int64, boolean or object (str) by their declared type.

Imports only pyarrow, numpy, orjson and stdlib modules of cepplan (pandas when a pandas frame
is asked for), so the local path starts fast. Known departures from Spark, on inputs a CEP
file rarely holds: CSV fields quoted over several lines are read as one field (Spark reads line
by line); hexadecimal floats are unparsable; a non-string Parquet column read as a string
formats doubles Python's way.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from cepplan.stats.text_input import (
    LineTooLong,
    first_line,
    line_blocks,
    open_text,
    text_blocks,
)
from cepplan.stats.time_format import TimeFormatError, has_zone, zoned_time_parser
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, merged_attribute_types
from cepplan.workload.durations import SECONDS_PER_UNIT
from cepplan.workload.input_files import (
    InputFileError,
    content_problem,
    duplicate_problem,
    files_in,
    header_names,
)

if TYPE_CHECKING:  # imported where a pandas frame is built
    import pandas as pd

# The reasons of spark_source.py, word for word (a test holds them equal).
REJECT = "__reject"
REJECT_MALFORMED = "malformed row"
REJECT_TYPE_MISSING = "missing type"
REJECT_TYPE_UNKNOWN = "unknown type"
REJECT_TIME = "missing or unparsable time"
MAX_TIME = 1e17  # largest |timestamp| in time units, as in spark_source; larger is unusable
REJECT_ID = "missing or unparsable id"

BATCH_BYTES = 8 << 20  # CSV / JSON lines block read at once (16 MiB: 100 MB more memory)
BATCH_ROWS = 256_000  # rows made canonical at once (Parquet: read at once)
_HEADER_SAMPLE = 1000  # JSON lines: columns are taken from this many first lines, as Spark does


class SourceError(ValueError):
    """The files cannot be read as the source describes (as `spark_source.SourceError`);
    `place`: the workload's JSON path at fault, if it is the workload's `source`."""

    def __init__(self, message: str, path: str = "", place: str = ""):
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path
        self.place = place


def expand_paths(paths: str | Sequence[str]) -> list[str]:
    """Files to read (`input_files.files_in`: directories and globs expanded as Spark does)."""
    try:
        return files_in(paths)
    except InputFileError as err:
        raise SourceError(err.message, err.path) from None


@dataclass
class Canonical:
    """One batch in canonical columns as NumPy, and the first reason each row is unusable:
    `reject` indexes `reasons` (-1: a good row). Types are codes into `type_names` (-1:
    missing); attributes are (values, parsed) pairs from `cast_values`; `ids_ok` is None when
    the ids are row positions."""

    type_codes: np.ndarray
    type_names: list[str]
    ts: np.ndarray
    ids: np.ndarray
    ids_ok: np.ndarray | None
    keys: dict[str, np.ndarray]
    attributes: dict[str, tuple[np.ndarray, np.ndarray]]
    attribute_types: dict[str, str]
    reject: np.ndarray
    reasons: list[str]
    zones: np.ndarray | None = None  # each row's zone offset as written (seconds east of UTC)

    def __len__(self) -> int:
        return len(self.ts)


def read_canonical(paths: str | Sequence[str], source: Mapping[str, Any],
                   attributes: Mapping[str, Mapping[str, str]], time_unit: str, *,
                   batch_bytes: int = BATCH_BYTES, text: bytes | None = None
                   ) -> Iterator[Canonical]:
    """The canonical columns of `paths` batch by batch (file order; ids are the row's 0-based
    position over all files unless `id_column`); `SourceError` naming the file when a file
    cannot be read as the source says. With `text` (CSV only): these bytes, whole lines of
    the one file `paths` names, are read instead of the file (the Spark job's byte ranges)."""
    if time_unit not in SECONDS_PER_UNIT:
        raise SourceError(f"unknown time_unit {time_unit!r}")
    files = expand_paths(paths)
    if text is None:
        for file in files:
            problem = content_problem(file, source["format"])
            if problem:
                raise SourceError(problem, file)
    attr_types = merged_attribute_types(attributes.values())
    keys = [k for k in source.get("key_columns", ()) if k not in attr_types]
    needed = list(dict.fromkeys(_row_columns(source) + list(attr_types)))
    time_parser = _time_parser(source.get("time_format"), time_unit)
    where = {"file": ", ".join(files)}  # the file being read, for errors
    raw_batches = _raw_batches(files, source, needed, attr_types, batch_bytes, where, text)
    while True:
        try:
            raw, malformed, positions = next(raw_batches)
        except StopIteration:
            return
        except (pa.ArrowInvalid, OSError) as err:  # OSError: a damaged compressed file
            raise SourceError(f"cannot read as {source['format']}: "
                              f"{str(err).splitlines()[0]}", where["file"]) from None
        except LineTooLong as err:
            raise SourceError(str(err), where["file"]) from None
        for start in range(0, max(len(raw), 1), BATCH_ROWS):  # at most BATCH_ROWS rows
            end = start + BATCH_ROWS  # a batch, whatever the rows' width
            yield _canonical(raw.slice(start, BATCH_ROWS), malformed[start:end], source,
                             attributes, attr_types, keys, time_parser, time_unit,
                             positions[start:end])


def read_batches(paths: str | Sequence[str], source: Mapping[str, Any],
                 attributes: Mapping[str, Mapping[str, str]], time_unit: str, *,
                 columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
    """Yield the canonical columns of `paths` batch by batch as pandas frames with `__reject`
    (`read_canonical`). `columns` limits the key / attribute columns returned (all are still
    read: every attribute of a row's type is checked)."""
    for batch in read_canonical(paths, source, attributes, time_unit):
        yield batch_frame(batch, columns)


def batch_frame(batch: Canonical, columns: Collection[str] | None = None,
                rows: np.ndarray | None = None) -> pd.DataFrame:
    """`batch` as a pandas frame: `__type` and `__reject` categoricals, `__ts`, `__id`, the
    key / attribute columns in `columns` (all: None) in their pandas dtypes; only `rows`
    (positions or a mask) when given."""
    import pandas as pd

    def part(values: np.ndarray) -> np.ndarray:
        return values if rows is None else values[rows]

    wanted = None if columns is None else set(columns)
    ids = (pd.Series(part(batch.ids)) if batch.ids_ok is None
           else _pandas_values(part(batch.ids), part(batch.ids_ok), "long"))
    out: dict[str, Any] = {
        EVENT_TYPE: pd.Series(pd.Categorical.from_codes(part(batch.type_codes),
                                                        batch.type_names)),
        EVENT_TS: part(batch.ts), EVENT_ID: ids}
    out.update({k: pd.Series(part(v), dtype=object) for k, v in batch.keys.items()
                if wanted is None or k in wanted})
    out.update({a: _pandas_values(part(v), part(ok), batch.attribute_types[a])
                for a, (v, ok) in batch.attributes.items() if wanted is None or a in wanted})
    frame = pd.DataFrame(out)
    frame[REJECT] = pd.Categorical.from_codes(part(batch.reject), batch.reasons)
    return frame


def _row_columns(source: Mapping[str, Any]) -> list[str]:
    """Columns every row needs: type, time, id and keys."""
    names = [source.get("type_column"), source.get("time_column", "ts"), source.get("id_column")]
    return [n for n in names if n] + list(source.get("key_columns", ()))


# ---- raw batches per format: (needed columns, malformed-row mask, row positions) ----

def _raw_batches(files: list[str], source: Mapping[str, Any], needed: list[str],
                 attr_types: Mapping[str, str], batch_bytes: int, where: dict[str, str],
                 text: bytes | None = None
                 ) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    fmt = source["format"]
    if fmt == "csv":
        return _csv_batches(files, source, needed, batch_bytes, where, text)
    if text is not None:
        raise SourceError(f"byte ranges are read from CSV only, not {fmt}")
    if fmt == "jsonl":
        return _json_batches(files, source, needed, batch_bytes, where)
    if fmt == "parquet":
        return _parquet_batches(files, needed, attr_types, where)
    raise SourceError(f"unknown source format {fmt!r} (csv, parquet or jsonl)")


def _missing(needed: list[str], present: Sequence[str], files: list[str]) -> None:
    """`SourceError` unless the input's columns `present` name each needed column once."""
    missing = [c for c in needed if c not in present]
    if missing:
        raise SourceError(f"column(s) {', '.join(map(repr, missing))} not in the input "
                          f"(its columns: {', '.join(present)})", ", ".join(files))
    twice = duplicate_problem(present, needed)
    if twice:
        raise SourceError(twice, ", ".join(files))


def _csv_header(files: list[str], source: Mapping[str, Any]) -> list[str]:
    """Column names: the first file's header line (as Spark takes them), or `columns`."""
    if not source.get("header", True):
        return list(source.get("columns") or ())
    for file in files:
        try:
            line = first_line(open_text(file))
        except LineTooLong as err:
            raise SourceError(str(err), file) from None
        if line is not None:
            return header_names(line)
    return []


def _csv_batches(files: list[str], source: Mapping[str, Any], needed: list[str],
                 batch_bytes: int, where: dict[str, str], text: bytes | None = None
                 ) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    """CSV as strings like Spark's PERMISSIVE reader: a row with too few or too many fields is
    malformed (and keeps its position), blank lines are skipped, empty fields are NULL,
    backslash escapes quotes. `text`: the one file's bytes to read instead of the file."""
    names = _csv_header(files, source)
    if not names:
        raise SourceError("cannot find column names: the CSV input is empty or has no "
                          "header line")
    _missing(needed, names, files)
    header = int(bool(source.get("header", True)))
    offset = 0
    for file in files:
        where["file"] = file
        rows = 0  # rows of the file handed on
        for table, malformed, positions in _csv_file(file, text, names, needed, header,
                                                     batch_bytes):
            rows = int(positions.max()) + 1 if len(positions) else rows
            yield table, malformed, positions + offset
        offset += rows


def _csv_file(file: str, text: bytes | None, names: list[str], needed: list[str],
              header: int, block: int) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    """One CSV file (or `text`) in blocks of whole lines of about `block` bytes: the needed
    columns, which rows are malformed, the rows' positions in the file. A row is a line
    (values hold no line breaks, as in Spark's reader without `multiLine`), so a block of
    whole lines parses as it would inside the file; each is parsed from memory
    (`text_blocks`: no Python call in pyarrow's read-ahead thread)."""
    position = 0  # rows (non-blank lines after the header) before the block
    for number, lines in enumerate(text_blocks(open_text(file, text), block)):
        skip = header if number == 0 else 0
        for part, end in _csv_block(lines, names, needed, skip, position):
            yield part
            position = end


def _csv_block(lines: bytes, names: list[str], needed: list[str], header: int, start: int
               ) -> Iterator[tuple[tuple[pa.Table, np.ndarray, np.ndarray], int]]:
    """One block of whole CSV lines parsed (pyarrow over bytes in memory): each batch with
    its malformed rows interleaved, and the position after it; `start`: the rows before."""
    bad: list[int] = []  # positions in the file of malformed rows not yet emitted

    def invalid(row: Any) -> str:
        if row.text.strip():  # row.number counts non-blank lines from 1, header included
            bad.append(start + row.number - 1 - header)
        return "skip"

    reader = pa_csv.open_csv(
        pa.BufferReader(lines),
        read_options=pa_csv.ReadOptions(column_names=names, skip_rows=header,
                                        use_threads=False, block_size=len(lines) + 1),
        parse_options=pa_csv.ParseOptions(escape_char="\\", double_quote=False,
                                          invalid_row_handler=invalid),
        convert_options=pa_csv.ConvertOptions(
            include_columns=needed, column_types={n: pa.string() for n in needed},
            strings_can_be_null=True, null_values=[""], quoted_strings_can_be_null=True))
    position = start
    for batch in reader:
        end, taken = position + batch.num_rows, 0
        while taken < len(bad) and bad[taken] < end:  # interleave the malformed rows
            end, taken = end + 1, taken + 1
        yield _with_malformed(pa.Table.from_batches([batch]), bad[:taken], position, end,
                              needed), end
        del bad[:taken]
        position = end
    if bad:
        yield (_with_malformed(pa.table({n: pa.array([], pa.string()) for n in needed}), bad,
                               position, bad[-1] + 1, needed), bad[-1] + 1)


def _with_malformed(good: pa.Table, malformed: list[int], start: int, end: int,
                    needed: list[str]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Good rows and NULL rows standing for the malformed ones, with their positions: the
    malformed rows' own, the good rows' the others of [start, end) in order."""
    span = np.arange(start, end, dtype=np.int64)
    is_bad = np.isin(span, np.asarray(malformed, dtype=np.int64))
    nulls = pa.table({n: pa.nulls(len(malformed), pa.string()) for n in needed})
    table = pa.concat_tables([good.select(needed), nulls])
    flags = np.concatenate([np.zeros(good.num_rows, bool), np.ones(len(malformed), bool)])
    return table, flags, np.concatenate([span[~is_bad], span[is_bad]])


def _json_text(value: Any) -> str | None:
    """A JSON value as the string Spark's JSON reader gives a string column."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return orjson.dumps(value).decode()


def _json_batches(files: list[str], source: Mapping[str, Any], needed: list[str],
                  batch_bytes: int, where: dict[str, str]
                  ) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
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
        where["file"] = file
        for lines in line_blocks(open_text(file), batch_bytes):
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
        try:
            for line in (line for block in line_blocks(open_text(file), 1 << 16)
                         for line in block):
                if lines >= _HEADER_SAMPLE:
                    break
                lines += 1
                record = _json_record(line) if line.strip() else None
                if record is not None:
                    seen.update(dict.fromkeys(record))
        except LineTooLong as err:
            raise SourceError(str(err), file) from None
    if not seen:
        raise SourceError("no JSON object in the first lines (empty input or not JSON lines)",
                          ", ".join(files))
    return seen


def _parquet_batches(files: list[str], needed: list[str], attr_types: Mapping[str, str],
                     where: dict[str, str]) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    import pyarrow.parquet as pq

    offset = 0
    for file in files:
        where["file"] = file
        try:
            reader = pq.ParquetFile(file)
        except (pa.ArrowInvalid, OSError) as err:
            raise SourceError(f"cannot read as Parquet: {err}", file) from None
        _missing(needed, reader.schema_arrow.names, [file])
        for name in needed:
            _check_stored_type(name, reader.schema_arrow.field(name).type,
                               attr_types.get(name), file)
        for group in range(reader.num_row_groups):  # reading the whole file in one call
            # keeps every row group read so far in memory (Arrow 26)
            for batch in reader.iter_batches(batch_size=BATCH_ROWS, columns=needed,
                                             row_groups=[group]):
                table = pa.Table.from_batches([batch])
                yield (table, np.zeros(len(table), dtype=bool),
                       np.arange(offset, offset + len(table), dtype=np.int64))
                offset += len(table)


def _check_stored_type(name: str, stored: pa.DataType, kind: str | None, file: str) -> None:
    """`SourceError` for a typed column that cannot hold what the workload says (`kind`: an
    attribute's type, None for the type, time, id and key columns), as `spark_source` checks:
    nested values (struct, list, map) anywhere; true/false where a number belongs or a
    number, time or date where true/false or a number belongs (silently 1.0/0.0 otherwise).
    Text columns are cast row by row instead, unparsable rows rejected and counted."""
    if pa.types.is_dictionary(stored):
        stored = stored.value_type
    if pa.types.is_nested(stored):
        raise SourceError(f"column {name!r} holds nested values (lists, maps or records), "
                          "which cepplan does not read: store it as a plain column", file)
    text = pa.types.is_string(stored) or pa.types.is_large_string(stored)
    number = (pa.types.is_integer(stored) or pa.types.is_floating(stored)
              or pa.types.is_decimal(stored))
    wants_number = kind in ("double", "long")
    if pa.types.is_boolean(stored):
        clash = wants_number
    elif kind == "bool":
        clash = not text
    else:
        clash = wants_number and not (number or text)
    if clash:
        raise SourceError(f"column {name!r} holds {stored} values, but the workload says "
                          f"{kind}", file)


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


def _plain_cast(array: pa.Array, kind: str) -> np.ndarray | None:
    """The common case cheaply: every value a number Arrow's cast reads, which is in the
    syntax Spark's cast accepts (Arrow reads a subset of `_DOUBLE` and the special literals,
    and of the long syntax except hexadecimal, excluded here); None when some value needs the
    trimming and checking path."""
    if kind == "long" and pc.any(pc.match_substring(array, "x", ignore_case=True)).as_py():
        return None
    try:
        return pc.cast(array, pa.int64() if kind == "long" else pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _string_to_double(array: pa.Array) -> np.ndarray:
    fast = _plain_cast(array, "double")
    if fast is not None:
        return (fast.to_numpy(zero_copy_only=False),
                ~pc.is_null(fast).to_numpy(zero_copy_only=False))
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
    fast = _plain_cast(array, "long")
    if fast is not None:
        ok = ~pc.is_null(fast).to_numpy(zero_copy_only=False)
        return pc.fill_null(fast, 0).to_numpy(zero_copy_only=False), ok
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


def cast_values(array: pa.ChunkedArray | pa.Array, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """`array` as the workload type `kind` (double, long, bool, string) with Spark's try_cast
    rules, as NumPy, and which values are not NULL (a value that cannot be cast is NULL; NaN
    is a double): float64 (NaN where NULL), int64 (0 where NULL), bool, or objects (None)."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    present = ~pc.is_null(array).to_numpy(zero_copy_only=False)
    typ = array.type
    if kind == "string":
        return _as_string(array), present
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
        values, ok = cast_values(pa.array(_as_string(array), pa.string()), kind)
        return values, ok & present
    ok = ok & present
    if kind == "double":
        return np.where(ok, values, np.nan), ok
    return values, ok


def cast_column(array: pa.ChunkedArray | pa.Array, kind: str) -> tuple[pd.Series, np.ndarray]:
    """`cast_values` as a pandas Series: nullable dtypes for long and bool (Int64, boolean)."""
    values, ok = cast_values(array, kind)
    return _pandas_values(values, ok, kind), ok


def _pandas_values(values: np.ndarray, ok: np.ndarray, kind: str) -> pd.Series:
    import pandas as pd

    if kind == "string":
        return pd.Series(values, dtype=object)
    if kind == "double":
        return pd.Series(values, dtype=np.float64)
    dtype = "Int64" if kind == "long" else "boolean"
    return pd.Series(pd.array(values, dtype=dtype)).mask(~ok)


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

def _time_parser(pattern: str | None, time_unit: str
                 ) -> Callable[[pa.Array], tuple[np.ndarray, np.ndarray]] | None:
    """`time_format.zoned_time_parser` of the source's pattern (None without one)."""
    if pattern is None:
        return None
    try:
        return zoned_time_parser(pattern, time_unit)
    except TimeFormatError as err:
        raise SourceError(str(err)) from None


def first_unparsed_time(paths: Sequence[str], source: Mapping[str, Any],
                        attributes: Mapping[str, Mapping[str, str]], time_unit: str
                        ) -> str | None:
    """The first value of the time column (in the first batch of the first file) that is
    read as no time, as text; None when there is none or the file cannot be read."""
    column_name = source.get("time_column", "ts")
    try:
        files = expand_paths(paths)
        raw, _, _ = next(_raw_batches(files[:1], source, [column_name], {}, 1 << 20,
                                      {"file": files[0]}))
        column = raw.column(column_name).combine_chunks()
        times, _ = _time_values(column, _time_parser(source.get("time_format"), time_unit),
                                time_unit)
    except (SourceError, StopIteration, pa.ArrowInvalid, OSError, LineTooLong):
        return None
    unread = np.isnan(times) & ~pc.is_null(column).to_numpy(zero_copy_only=False)
    first = np.flatnonzero(unread)
    return str(_as_string(column.take(first[:1]))[0]) if len(first) else None


def _time_values(column: pa.Array, parser, time_unit: str
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Times as float in `time_unit` (NaN: missing, unparsable or not finite), and with a
    parser, each value's zone offset as written (seconds east of UTC)."""
    per_unit = SECONDS_PER_UNIT[time_unit]
    typ = column.type
    zones = None
    if parser is not None:
        values, zones = parser(column if pa.types.is_string(column.type)
                               else pa.array(_as_string(column), pa.string()))
    elif pa.types.is_timestamp(typ):
        micros = pc.cast(column, pa.timestamp("us", tz=typ.tz), safe=False).cast(pa.int64())
        values = pc.cast(micros, pa.float64()).to_numpy(zero_copy_only=False) / (1e6 * per_unit)
    elif pa.types.is_date(typ):
        days = pc.cast(pc.cast(column, pa.date32()), pa.int32())
        values = pc.cast(days, pa.float64()).to_numpy(zero_copy_only=False) * (86400.0 / per_unit)
    else:
        values = cast_values(column, "double")[0]
    values = np.where(pc.is_null(column).to_numpy(zero_copy_only=False), np.nan, values)
    return np.where(np.isfinite(values), values, np.nan), zones


# ---- canonical frame and reject reasons ----

def _canonical(raw: pa.Table, malformed: np.ndarray, source: Mapping[str, Any],
               attributes: Mapping[str, Mapping[str, str]], attr_types: Mapping[str, str],
               keys: list[str], parser, time_unit: str, positions: np.ndarray) -> Canonical:
    n = len(raw)
    type_column = source.get("type_column")
    if type_column:
        column = raw.column(type_column).combine_chunks()
        if not pa.types.is_string(column.type):
            column = pa.array(_as_string(column), pa.string())
        encoded = pc.dictionary_encode(column)
        type_codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
        type_names = encoded.dictionary.to_pylist()
    else:
        type_codes, type_names = np.zeros(n, dtype=np.int8), [source["type"]]
    ts, zones = _time_values(raw.column(source.get("time_column", "ts")).combine_chunks(),
                             parser, time_unit)
    if not has_zone(source.get("time_format") or ""):
        zones = None
    ids, ids_ok = positions, None
    if source.get("id_column"):
        ids, ids_ok = cast_values(raw.column(source["id_column"]), "long")
    key_values = {k: _as_string(raw.column(k).combine_chunks()) for k in keys}
    cast = {a: cast_values(raw.column(a), kind) for a, kind in attr_types.items()}
    batch = Canonical(type_codes, type_names, ts, ids, ids_ok, key_values, cast,
                      dict(attr_types), np.full(n, -1, dtype=np.int16), [], zones)
    _reasons(batch, raw, malformed, attributes)
    return batch


def _reasons(batch: Canonical, raw: pa.Table, malformed: np.ndarray,
             attributes: Mapping[str, Mapping[str, str]]) -> None:
    """The first reason each row is unusable, in spark_source's priority, into
    `batch.reject` / `batch.reasons`."""
    code, texts = batch.reject, batch.reasons

    def mark(mask: np.ndarray, text: str) -> None:
        free = mask & (code < 0)
        if free.any():  # a reason may come twice: an attribute of several schemas
            if text not in texts:
                texts.append(text)
            code[free] = texts.index(text)

    mark(malformed, REJECT_MALFORMED)
    type_codes = batch.type_codes
    type_missing = type_codes < 0
    mark(type_missing, REJECT_TYPE_MISSING)
    categories = np.asarray(batch.type_names, dtype=object)

    def of_types(names: list[str]) -> np.ndarray:
        """Rows whose type is one of `names`."""
        if not len(categories):
            return np.zeros(len(type_codes), dtype=bool)
        return ~type_missing & np.isin(categories, names)[type_codes]

    mark(~type_missing & ~of_types(list(attributes)), REJECT_TYPE_UNKNOWN)
    mark(np.isnan(batch.ts) | (np.abs(batch.ts) > MAX_TIME), REJECT_TIME)  # spark_source's
    if batch.ids_ok is not None:
        mark(~batch.ids_ok, REJECT_ID)
    for key, values in batch.keys.items():
        mark(values == None, f"missing key {key!r}")  # noqa: E711 (elementwise)
    by_schema: dict[tuple, list[str]] = {}
    for type_name, attrs in attributes.items():
        by_schema.setdefault(tuple(sorted(attrs)), []).append(type_name)
    for names, type_names in by_schema.items():
        rows = of_types(type_names)
        if not names or not rows.any():
            continue
        for name in names:
            absent = pc.is_null(raw.column(name)).to_numpy(zero_copy_only=False)
            mark(rows & absent, f"missing attribute {name!r}")
            mark(rows & ~batch.attributes[name][1], f"unparsable attribute {name!r}")
