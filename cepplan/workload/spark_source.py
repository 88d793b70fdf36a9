"""Read event files through a workload's `source` mapping into a canonical Spark DataFrame.

Standalone on purpose: imports only pyspark, the standard library,
`cepplan.workload.columns`, `cepplan.workload.durations` and `cepplan.workload.input_files`
(all stdlib-only), and takes plain
JSON-able arguments, so the generated Spark job ships this very file in its runtime zip and runs
it where cepplan is not installed. `cepplan.workload.source_spec` turns a `Workload` into
those arguments.

The result has the canonical columns `__type`, `__ts` (float, in the workload's `time_unit`),
`__id` (int64), then key columns that are not attributes (as strings), then one column per
attribute name cast to its declared type, then `__reject`: NULL for a good row, else why the row
is unusable (`REJECT_*` below, attribute reasons name the attribute). Rows are never dropped
here: callers count rejects by reason (`valid_rows` keeps the good ones).

    df = read_events(spark, ["events.csv"], source, {"GOOG": {"peak": "double"}}, "min")
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cepplan.workload.columns import (
    EVENT_ID,
    EVENT_TS,
    EVENT_TYPE,
    EVENT_ZONE,
    merged_attribute_types,
)
from cepplan.workload.durations import SECONDS_PER_UNIT
from cepplan.workload.input_files import (
    UNCLOSED_QUOTE_LINE,
    InputFileError,
    column_problem,
    content_problem,
    files_in,
    header_names,
    unique_names,
)

REJECT = "__reject"
REJECT_MALFORMED = "malformed row"
REJECT_QUOTE = "unclosed quote"  # a CSV line whose quote is still open at its end
REJECT_TYPE_MISSING = "missing type"
REJECT_TYPE_UNKNOWN = "unknown type"
REJECT_TIME = "missing or unparsable time"
REJECT_ID = "missing or unparsable id"
MAX_TIME = 1e17  # largest |timestamp| in time units (epoch microseconds fit); larger is rejected

SPARK_TYPES = {"double": T.DoubleType(), "long": T.LongType(), "string": T.StringType(),
               "bool": T.BooleanType()}
_CORRUPT = "__corrupt"
_HEADER_SAMPLE = 1000


class SourceError(ValueError):
    """The files cannot be read as the source describes (missing path or column, bad spec).

    `path` names the input concerned (empty when the problem is not in a file), kept apart from
    `message` so each caller names the file once, in its own error format."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path


def read_events(spark: SparkSession, paths: str | Sequence[str], source: Mapping[str, Any],
                attributes: Mapping[str, Mapping[str, str]], time_unit: str, *,
                positions: str = "exact", no_nulls: Collection[str] = (),
                zoned: bool = False) -> DataFrame:
    """Read `paths` as `source` says (format doc, "source") into the canonical columns.

    `attributes` maps each known event type to {attribute: double|long|string|bool}; rows of
    other types are rejected as unknown. Without an `id_column`, `positions="exact"` numbers
    rows 0, 1, 2, ... in the order Spark reads them (for one file: its row order; costs one
    light extra pass), `"monotonic"` gives unique ids increasing in that order without it.
    `no_nulls`: input columns known to hold no NULL (e.g. by the Parquet footers' null
    counts); their NULL checks are left out of `__reject`, so a job that needs only the
    reject reason does not read an attribute column the checks would otherwise touch.
    `zoned` (the `time_format` reads a zone offset): also `__zone`, each time's offset as
    written (int32, seconds east of UTC), so that matches write their times back in it.
    """
    if time_unit not in SECONDS_PER_UNIT:
        raise SourceError(f"unknown time_unit {time_unit!r}")
    paths = [paths] if isinstance(paths, str) else list(paths)
    _check_paths(paths, source["format"])
    raw = _read_raw(spark, paths, source, attributes)
    _check_columns(raw, source, attributes, paths)
    attr_types = merged_attribute_types(attributes.values())
    type_col = source.get("type_column")
    keys = [k for k in source.get("key_columns", ()) if k not in attr_types]

    out: dict[str, Column] = {}
    out[EVENT_TYPE] = (F.col(type_col).cast("string") if type_col
                       else F.lit(source["type"]).cast("string"))
    out[EVENT_TS] = _time_column(raw, source, time_unit)
    if source.get("id_column"):
        out[EVENT_ID] = _try_cast(F.col(source["id_column"]), T.LongType())
    else:
        out[EVENT_ID] = _position_column(spark, raw, positions)
    for key in keys:
        out[key] = F.col(key).cast("string")
    for attr, kind in attr_types.items():
        out[attr] = _cast_column(raw, attr, SPARK_TYPES[kind])
    if zoned and source.get("time_format"):
        out[EVENT_ZONE] = _zone_column(source)
    out[REJECT] = _reject_column(raw, source, attributes, attr_types, keys, out,
                                 set(no_nulls))
    return raw.select([column.alias(name) for name, column in out.items()])


def valid_rows(events: DataFrame) -> DataFrame:
    """The good rows of `read_events`' result, without the `__reject` column."""
    return events.filter(F.col(REJECT).isNull()).drop(REJECT)


def reject_reasons(source: Mapping[str, Any],
                   attributes: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Every reason `read_events` can give in `__reject` for this source (so a job can count
    them all in one aggregate, without grouping the rows)."""
    attr_types = merged_attribute_types(attributes.values())
    reasons = [REJECT_MALFORMED, REJECT_TYPE_MISSING, REJECT_TYPE_UNKNOWN, REJECT_TIME]
    if source["format"] == "csv":
        reasons.append(REJECT_QUOTE)
    if source.get("id_column"):
        reasons.append(REJECT_ID)
    reasons += [_missing_key(k) for k in source.get("key_columns", ()) if k not in attr_types]
    for name in attr_types:
        reasons += list(_attribute_reasons(name))
    return reasons


def _missing_key(key: str) -> str:
    return f"missing key {key!r}"


def _attribute_reasons(name: str) -> tuple[str, str]:
    return f"missing attribute {name!r}", f"unparsable attribute {name!r}"


def spark_type(kind: str) -> T.DataType:
    """The Spark type of a workload attribute type."""
    return SPARK_TYPES[kind]


def _check_paths(paths: list[str], fmt: str) -> None:
    """Local paths name files whose first bytes fit `fmt` (`input_files.content_problem`)."""
    if not paths:
        raise SourceError("no input files given")
    local = [p for p in paths if "://" not in p and not p.startswith("file:")]
    try:
        files = files_in(local) if local else []
    except InputFileError as err:
        raise SourceError(err.message, err.path) from None
    for file in files:
        problem = content_problem(file, fmt)
        if problem:
            raise SourceError(problem, file)


def _read_raw(spark: SparkSession, paths: list[str], source: Mapping[str, Any],
              attributes: Mapping[str, Mapping[str, str]]) -> DataFrame:
    """The files as Spark reads them: CSV and JSON lines as strings (we cast), Parquet typed."""
    fmt = source["format"]
    reader = spark.read
    try:
        if fmt == "parquet":
            return reader.parquet(*paths)
        if fmt == "csv":
            header = bool(source.get("header", True))
            names = _csv_names(spark, paths) if header else list(source.get("columns") or ())
            if not names:
                raise SourceError("cannot find column names: the CSV input is empty or has "
                                  "no header line")
            check_column_names(names, source, attributes, paths)
            schema = _string_schema([*unique_names(names), _CORRUPT])
            return (reader.schema(schema).option("header", header)
                    .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", _CORRUPT)
                    .csv(paths))
        if fmt == "jsonl":
            schema = _string_schema([*_json_columns(spark, paths, source), _CORRUPT])
            return (reader.schema(schema).option("mode", "PERMISSIVE")
                    .option("columnNameOfCorruptRecord", _CORRUPT).json(paths))
    except AnalysisException as exc:
        raise SourceError(f"cannot read: {_first_line(exc)}", ", ".join(paths)) from None
    raise SourceError(f"unknown source format {fmt!r} (csv, parquet or jsonl)")


def _csv_names(spark: SparkSession, paths: list[str]) -> list[str]:
    """The column names of the first non-blank line, as the in-process reader takes them
    (`input_files.header_names`; Spark's own header inference renames repeated names)."""
    line = (spark.read.text(paths).filter(F.length(F.trim(F.col("value"))) > 0)
            .select("value").first())
    return header_names(line[0]) if line is not None else []


def _json_columns(spark: SparkSession, paths: list[str], source: Mapping[str, Any]) -> list[str]:
    """Field names of JSON lines input: those the first lines use, plus every needed column."""
    seen: dict[str, None] = {}
    for row in spark.read.text(paths).limit(_HEADER_SAMPLE).collect():
        try:
            record = json.loads(row[0])
        except ValueError:
            continue
        if isinstance(record, dict):
            seen.update(dict.fromkeys(record))
    if not seen:
        raise SourceError("no JSON object in the first lines (empty input or not JSON lines)",
                          ", ".join(paths))
    for column in _row_columns(source):
        if column not in seen:
            raise SourceError(f"column {column!r} is not in the input (not found in its first "
                              f"{_HEADER_SAMPLE} lines; present: {', '.join(list(seen)[:20])})")
    return list(seen)


def _row_columns(source: Mapping[str, Any]) -> list[str]:
    """Columns every row needs: type, time, id and keys."""
    names = [source.get("type_column"), source.get("time_column", "ts"), source.get("id_column")]
    return [n for n in names if n] + list(source.get("key_columns", ()))


def _check_columns(raw: DataFrame, source: Mapping[str, Any],
                   attributes: Mapping[str, Mapping[str, str]], paths: list[str]) -> None:
    if source["format"] != "csv":  # CSV names are checked before they are renamed unique
        check_column_names([c for c in raw.columns if c != _CORRUPT], source, attributes,
                           paths)
    kinds = merged_attribute_types(attributes.values())
    for name in dict.fromkeys(_row_columns(source) + list(kinds)):
        stored = raw.schema[name].dataType
        if isinstance(stored, (T.StructType, T.ArrayType, T.MapType)):
            raise SourceError(f"column {name!r} holds nested values (lists, maps or records), "
                              "which cepplan does not read: store it as a plain column",
                              ", ".join(paths))
        if name in kinds and _clashes(stored, SPARK_TYPES[kinds[name]]):
            raise SourceError(f"column {name!r} holds {stored.simpleString()} values, but the "
                              f"workload says {kinds[name]}", ", ".join(paths))


def check_column_names(names: Sequence[str], source: Mapping[str, Any],
                       attributes: Mapping[str, Mapping[str, str]], paths: list[str]) -> None:
    """`SourceError` unless the input's column `names` hold every column the source needs,
    each once (`input_files.column_problem`)."""
    needed = _row_columns(source) + list(merged_attribute_types(attributes.values()))
    problem = column_problem(names, needed)
    if problem:
        raise SourceError(problem, ", ".join(paths))


def _clashes(stored: T.DataType, target: T.DataType) -> bool:
    """A typed column (Parquet, inferred JSON) whose values cannot mean the workload's type:
    true/false read as numbers (1.0/0.0) or numbers as true/false would be silently wrong.
    Text columns are cast row by row instead, unparsable rows rejected and counted."""
    numeric = isinstance(target, T.NumericType)
    if isinstance(stored, T.BooleanType):
        return numeric
    if isinstance(target, T.BooleanType):
        return not isinstance(stored, (T.BooleanType, T.StringType))
    return numeric and not isinstance(stored, (T.NumericType, T.StringType))



def _string_schema(names: list[str]) -> T.StructType:
    return T.StructType([T.StructField(n, T.StringType(), True) for n in names])


def _try_cast(column: Column, target: T.DataType) -> Column:
    """Cast that yields NULL instead of failing (ANSI mode is on by default in Spark 4)."""
    if hasattr(column, "try_cast"):
        return column.try_cast(target)
    return column.cast(target)  # Spark 3.5: ANSI off by default, cast gives NULL on failure


def _cast_column(raw: DataFrame, name: str, target: T.DataType) -> Column:
    current = raw.schema[name].dataType
    if current == target:
        return F.col(name)
    if isinstance(target, T.StringType):
        return F.col(name).cast(target)
    return _try_cast(F.col(name), target)


def _time_column(raw: DataFrame, source: Mapping[str, Any], time_unit: str) -> Column:
    """Timestamps as float in `time_unit`: numbers as they are, formatted strings and Spark
    timestamps converted from seconds since the epoch (strings read in the session time zone)."""
    name = source.get("time_column", "ts")
    per_unit = SECONDS_PER_UNIT[time_unit]
    kind = raw.schema[name].dataType
    if source.get("time_format"):
        parsed = F.try_to_timestamp(F.col(name).cast("string"), F.lit(source["time_format"]))
        value = F.unix_micros(parsed) / (1e6 * per_unit)
    elif isinstance(kind, (T.TimestampType, T.TimestampNTZType)):
        value = F.unix_micros(F.col(name).cast(T.TimestampType())) / (1e6 * per_unit)
    elif isinstance(kind, T.DateType):
        value = F.unix_date(F.col(name)) * (86400.0 / per_unit)
    else:
        value = _try_cast(F.col(name), T.DoubleType())
    value = value.cast(T.DoubleType())
    # beyond MAX_TIME (1e300, say) later casts to whole steps overflow: such a row is unusable
    usable = value.isNotNull() & ~F.isnan(value) & (F.abs(value) <= MAX_TIME)
    return F.when(usable, value)


def _zone_column(source: Mapping[str, Any]) -> Column:
    """Each time's zone offset as written, in seconds east of UTC (int; 0 where the time does
    not parse): its wall-clock reading less its instant (the session's time zone is UTC)."""
    text = F.col(source.get("time_column", "ts")).cast("string")
    pattern = F.lit(source["time_format"])
    instant = F.try_to_timestamp(text, pattern)
    wall = F.to_timestamp_ntz(text, pattern).cast(T.TimestampType())  # read where it parses
    offset = (F.unix_micros(wall) - F.unix_micros(instant)) / F.lit(1_000_000)
    return F.coalesce(F.when(instant.isNotNull(), offset), F.lit(0)).cast(T.IntegerType())


def _position_column(spark: SparkSession, raw: DataFrame, positions: str) -> Column:
    """Row ids in read order: exact 0-based positions, or Spark's monotonic ids."""
    mono = F.monotonically_increasing_id()
    if positions == "monotonic":
        return mono
    if positions != "exact":
        raise SourceError(f"positions must be 'exact' or 'monotonic', got {positions!r}")
    # monotonically_increasing_id = partition index << 33 | row within partition; add the
    # number of rows in the partitions before it (one extra pass that reads no column data).
    counts = dict(raw.select(F.spark_partition_id().alias("p")).groupBy("p").count().collect())
    offsets, total = [], 0
    for part in range(max(counts, default=-1) + 1):
        offsets.append(total)
        total += counts.get(part, 0)
    if not offsets:
        return mono
    pid = F.spark_partition_id()
    base = F.element_at(F.array(*[F.lit(o).cast("long") for o in offsets]), pid + 1)
    return base + (mono - F.shiftleft(pid.cast("long"), 33))


def _reject_column(raw: DataFrame, source: Mapping[str, Any],
                   attributes: Mapping[str, Mapping[str, str]], attr_types: Mapping[str, str],
                   keys: list[str], out: Mapping[str, Column], no_nulls: set[str]) -> Column:
    """Why a row is unusable (first reason found), or NULL: the order below is the priority.
    A check that cannot fire (a column in `no_nulls`, read as it is stored) is left out."""
    reasons: list[Column] = []
    if _CORRUPT in raw.columns:
        corrupt = F.col(_CORRUPT)
        if source["format"] == "csv":
            reasons.append(F.when(corrupt.rlike(UNCLOSED_QUOTE_LINE), F.lit(REJECT_QUOTE)))
        reasons.append(F.when(corrupt.isNotNull(), F.lit(REJECT_MALFORMED)))
    type_value = out[EVENT_TYPE]
    if source.get("type_column") not in no_nulls:  # a fixed type, or a column with NULLs
        reasons.append(F.when(type_value.isNull(), F.lit(REJECT_TYPE_MISSING)))
    known = list(attributes)
    reasons.append(F.when(~type_value.isin(known), F.lit(REJECT_TYPE_UNKNOWN)))
    reasons.append(F.when(out[EVENT_TS].isNull(), F.lit(REJECT_TIME)))
    if source.get("id_column"):
        reasons.append(F.when(out[EVENT_ID].isNull(), F.lit(REJECT_ID)))
    for key in keys:
        if key not in no_nulls:
            reasons.append(F.when(F.col(key).isNull(), F.lit(_missing_key(key))))
    by_schema: dict[tuple, list[str]] = {}
    for type_name, attrs in attributes.items():
        by_schema.setdefault(tuple(sorted(attrs)), []).append(type_name)
    attribute_reason = None
    for names, types in by_schema.items():
        if not names:
            continue
        checks = [c for c in (_attribute_reason(name, out[name], no_nulls,
                                                as_stored=raw.schema[name].dataType
                                                == SPARK_TYPES[attr_types[name]])
                              for name in names) if c is not None]
        if not checks:
            continue
        clause = type_value.isin(types)
        attribute_reason = (F.when(clause, F.coalesce(*checks)) if attribute_reason is None
                            else attribute_reason.when(clause, F.coalesce(*checks)))
    if attribute_reason is not None:
        reasons.append(attribute_reason)
    return F.coalesce(*reasons)


def _attribute_reason(name: str, cast: Column, no_nulls: set[str], *,
                      as_stored: bool) -> Column | None:
    """Missing (NULL in the input) or unparsable (NULL once cast); None when neither can
    happen: no NULL in the input (`no_nulls`), read `as_stored` (no cast)."""
    missing, unparsable = _attribute_reasons(name)
    if name not in no_nulls:
        return F.when(F.col(name).isNull(), F.lit(missing)).when(cast.isNull(),
                                                                 F.lit(unparsable))
    return None if as_stored else F.when(cast.isNull(), F.lit(unparsable))


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
