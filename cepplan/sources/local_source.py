"""Read event files through a workload's `source` with pyarrow, batch by batch, into the
canonical columns of `cepplan.workload.spark_source.read_events` (no JVM): the one in-process
reader, used by the statistics engine (`read_batches`, pandas) and the in-process engine
(`read_canonical`, NumPy, via `engine_adapter/local/source.py`).

Same plain arguments, same columns (`__type`, `__ts`, `__id`, non-attribute keys as strings,
one column per attribute name, `__reject`), same reject reasons in the same priority and the
same casts as Spark's `try_cast` (checked side by side in tests/stats/test_local_vs_spark.py);
each format's reader is `raw_batches`, the casts `try_cast`:

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

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepplan.sources.csv_lines import LINE_PROBLEMS, MALFORMED, UNCLOSED_QUOTE
from cepplan.sources.raw_batches import BATCH_ROWS, SourceError, raw_batches, row_columns
from cepplan.sources.text_input import LineTooLong
from cepplan.sources.time_format import TimeFormatError, has_zone, zoned_time_parser
from cepplan.sources.try_cast import as_strings, cast_values, pandas_values
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, merged_attribute_types
from cepplan.workload.durations import SECONDS_PER_UNIT
from cepplan.workload.input_files import InputFileError, content_problem, files_in

if TYPE_CHECKING:  # imported where a pandas frame is built
    import pandas as pd

# The reasons of spark_source.py, word for word (a test holds them equal).
REJECT = "__reject"
REJECT_MALFORMED = LINE_PROBLEMS[MALFORMED]
REJECT_QUOTE = LINE_PROBLEMS[UNCLOSED_QUOTE]
REJECT_TYPE_MISSING = "missing type"
REJECT_TYPE_UNKNOWN = "unknown type"
REJECT_TIME = "missing or unparsable time"
MAX_TIME = 1e17  # largest |timestamp| in time units, as in spark_source; larger is unusable
REJECT_ID = "missing or unparsable id"

BATCH_BYTES = 8 << 20  # CSV / JSON lines block read at once (16 MiB: 100 MB more memory)


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
    needed = list(dict.fromkeys(row_columns(source) + list(attr_types)))
    time_parser = source_time_parser(source.get("time_format"), time_unit)
    where = {"file": ", ".join(files)}  # the file being read, for errors
    batches = raw_batches(files, source, needed, attr_types, batch_bytes, where, text)
    while True:
        try:
            raw, malformed, positions = next(batches)
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
           else pandas_values(part(batch.ids), part(batch.ids_ok), "long"))
    out: dict[str, Any] = {
        EVENT_TYPE: pd.Series(pd.Categorical.from_codes(part(batch.type_codes),
                                                        batch.type_names)),
        EVENT_TS: part(batch.ts), EVENT_ID: ids}
    out.update({k: pd.Series(part(v), dtype=object) for k, v in batch.keys.items()
                if wanted is None or k in wanted})
    out.update({a: pandas_values(part(v), part(ok), batch.attribute_types[a])
                for a, (v, ok) in batch.attributes.items() if wanted is None or a in wanted})
    frame = pd.DataFrame(out)
    frame[REJECT] = pd.Categorical.from_codes(part(batch.reject), batch.reasons)
    return frame


# ---- time ----

def source_time_parser(pattern: str | None, time_unit: str
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
        raw, _, _ = next(raw_batches(files[:1], source, [column_name], {}, 1 << 20,
                                      {"file": files[0]}))
        column = raw.column(column_name).combine_chunks()
        times, _ = event_times(column, source_time_parser(source.get("time_format"), time_unit),
                                time_unit)
    except (SourceError, StopIteration, pa.ArrowInvalid, OSError, LineTooLong):
        return None
    unread = np.isnan(times) & ~pc.is_null(column).to_numpy(zero_copy_only=False)
    first = np.flatnonzero(unread)
    return str(as_strings(column.take(first[:1]))[0]) if len(first) else None


def event_times(column: pa.Array, parser, time_unit: str
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Times as float in `time_unit` (NaN: missing, unparsable or not finite), and with a
    parser, each value's zone offset as written (seconds east of UTC)."""
    per_unit = SECONDS_PER_UNIT[time_unit]
    typ = column.type
    zones = None
    if parser is not None:
        values, zones = parser(column if pa.types.is_string(column.type)
                               else pa.array(as_strings(column), pa.string()))
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
            column = pa.array(as_strings(column), pa.string())
        encoded = pc.dictionary_encode(column)
        type_codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
        type_names = encoded.dictionary.to_pylist()
    else:
        type_codes, type_names = np.zeros(n, dtype=np.int8), [source["type"]]
    ts, zones = event_times(raw.column(source.get("time_column", "ts")).combine_chunks(),
                             parser, time_unit)
    if not has_zone(source.get("time_format") or ""):
        zones = None
    ids, ids_ok = positions, None
    if source.get("id_column"):
        ids, ids_ok = cast_values(raw.column(source["id_column"]), "long")
    key_values = {k: as_strings(raw.column(k).combine_chunks()) for k in keys}
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

    for problem, reason in LINE_PROBLEMS.items():  # `malformed`: each row's line problem
        mark(malformed == problem, reason)
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
