"""`cepplan import QUERY SAMPLE [-o workload.json]`: a SQL MATCH_RECOGNIZE query as a
workload, its columns and their types read from a sample of the events."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.errors import InputError
from cepplan.terminal import echo
from cepplan.workload.names import is_name

_ARROW_TYPES = {"int8": "long", "int16": "long", "int32": "long", "int64": "long",
                "uint8": "long", "uint16": "long", "uint32": "long", "double": "double",
                "float": "double", "halffloat": "double", "string": "string",
                "large_string": "string", "bool": "bool"}


def import_command(
    query: Path = typer.Argument(..., metavar="QUERY",
                                 help="The SQL file with the MATCH_RECOGNIZE query."),
    sample: Path = typer.Argument(..., metavar="SAMPLE",
                                  help="A sample of the events (CSV with a header, JSON lines "
                                  "or Parquet): the columns and their types."),
    output: Path = options.output("The workload.json to write.", Path("workload.json")),
    time_unit: str = typer.Option("s", "--time-unit", help="The unit of the ORDER BY column: "
                                  "ms, s, min, h or d."),
    within: str | None = options.duration("--within", None, "The match's time window, for a "
                                          "query without Flink's WITHIN.",
                                          bare="--time-unit"),
    quiet: bool = options.quiet(),
) -> None:
    """Write the workload that detects what a SQL MATCH_RECOGNIZE query matches, or say which
    clause cannot be carried over (docs/import.md)."""
    from cepplan.fileio import read_input, write_json_atomic
    from cepplan.workload import build_workload
    from cepplan.workload.sql_import import import_query

    if time_unit not in ("ms", "s", "min", "h", "d"):
        raise options.option_error("--time-unit", f"{time_unit!r} is not one of ms, s, min, "
                                   "h, d")
    window = None if within is None else options.duration_value("--within", within, time_unit)
    sql = read_input(query).decode("utf-8", errors="replace")
    sample_format, columns = sample_columns(sample)
    doc = import_query(sql, columns, file=str(query), sample_format=sample_format,
                       time_unit=time_unit, within=window)
    build_workload(doc, file=str(output))  # what is written is a valid workload
    write_json_atomic(output, doc)
    if not quiet:
        (pattern,) = doc["patterns"]
        order = ("in strict contiguity" if pattern["strategy"] == "strict" else
                 "in strict contiguity but for the last, the first after them that qualifies")
        skip = pattern.get("after_match")
        skip_text = "" if skip is None else ", after a match " + (
            skip if isinstance(skip, str) else " ".join(*skip.items()))
        for kind, said in (("OPTIONAL", "optional"), ("KLEENE", "repeated")):
            named = [o[1].split(":")[0] for o in pattern["structure"][1:]
                     if isinstance(o, list) and o[0] == kind]
            if named:
                order = f"({', '.join(named)} {said}) {order}"
        if "prefer" in pattern:
            skip_text += f", the {pattern['prefer']} match of each first row"
        echo(f"wrote {output}: pattern {pattern['name']} = SEQ of "
             f"{len(pattern['structure']) - 1} {doc['source']['type']} rows {order}{skip_text}")


def sample_columns(path: Path) -> tuple[str, dict[str, str]]:
    """The sample's format (csv, jsonl, parquet) and its columns with cepplan's types."""
    import pyarrow as pa

    name = path.name.lower()
    fmt = ("parquet" if name.endswith(".parquet") else
           "jsonl" if name.endswith((".jsonl", ".json", ".jsonl.gz")) else "csv")
    if not path.is_file():
        raise InputError.single(str(path), "", "file not found")
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            schema = pq.read_schema(path)
        elif fmt == "jsonl":
            import pyarrow.json as pj

            schema = pj.read_json(path).schema
        else:
            import pyarrow.csv as pc

            schema = pc.read_csv(path).schema
    except (pa.ArrowInvalid, OSError) as err:
        raise InputError.single(str(path), "", f"cannot read it as {fmt}: "
                                f"{str(err).splitlines()[0]}") from None
    columns = {}
    for field in schema:
        if not is_name(field.name) or field.name.startswith("__"):
            raise InputError.single(str(path), field.name, "not a column name cepplan reads "
                                    "(letters of any script, digits and '_', not starting "
                                    "with a digit or '__')")
        kind = _ARROW_TYPES.get(str(field.type))
        if kind is None:
            raise InputError.single(str(path), field.name, f"column type {field.type} is not "
                                    "one cepplan reads (numbers, text, booleans)")
        columns[field.name] = kind
    return fmt, columns
