"""Event files read per format (CSV, JSON lines, Parquet) as Spark's readers see them: the
needed columns as stored or as text, which rows are malformed, and each row's position.

The first step of `local_source`, kept apart so each format's reader stays small beside the
others; `SourceError` says why files cannot be read as the workload's `source` describes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.csv as pa_csv

from cepplan.sources.text_input import (
    LineTooLong,
    first_line,
    line_blocks,
    open_text,
    text_blocks,
)
from cepplan.workload.input_files import column_problem, header_names

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


def row_columns(source: Mapping[str, Any]) -> list[str]:
    """Columns every row needs: type, time, id and keys."""
    names = [source.get("type_column"), source.get("time_column", "ts"), source.get("id_column")]
    return [n for n in names if n] + list(source.get("key_columns", ()))


def raw_batches(files: list[str], source: Mapping[str, Any], needed: list[str],
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
    problem = column_problem(present, needed)
    if problem:
        raise SourceError(problem, ", ".join(files))


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
    for column in row_columns(source):
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
