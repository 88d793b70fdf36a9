"""Matches as typed rows, for Parquet output (docs/engine.md, "Matches as Parquet").

Each pattern has its own Arrow schema (`match_layouts`): the match's first and last
timestamps (and, with a `time_format`, the times as the input wrote them), per positive
variable its event's id, timestamp and attributes as columns `VAR.ATTR` (a list per match for
a Kleene variable; for a complex event its emitted attributes and its own match as JSON
text), then the pattern's emitted attributes. Rows are made a chunk of `Matches` at a time
from the table they rank (`table_rows`: no per-match Python object), or from match objects
where only their JSON text exists (`text_rows`: the context stage's matches, the Spark job's
writer off a local master).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.records import MATCH_COLUMN, RENDER_ROWS, emitted, flat_sets
from cepplan.engine_adapter.runtime.spec import KLEENE, PatternSpec, SpecError
from cepplan.engine_adapter.runtime.table import Table, whole_numbers
from cepplan.sources.time_format import TimeFormatError
from cepplan.sources.time_text import time_formatter
from cepplan.workload.columns import EVENT_ZONE, merged_attribute_types


class JobLayoutSource(Protocol):
    """What a layout reads of a job (`job.Job`; named here, not imported: the job module
    renders its rows with this one)."""

    data: Mapping[str, Any]
    patterns: Sequence[PatternSpec]
    types: Mapping[str, tuple[str, ...]]

    def is_complex(self, type_name: str) -> bool: ...

ARROW_TYPES = {"double": pa.float64(), "long": pa.int64(), "string": pa.string(),
               "bool": pa.bool_()}


class ColumnClash(SpecError):
    """Two columns of one pattern's layout would have one name."""

    def __init__(self, pattern: str, problem: str):
        super().__init__(f"pattern {pattern!r}: {problem}")
        self.pattern = pattern
        self.problem = problem


@dataclass(frozen=True)
class VariableColumns:
    """One positive variable: its columns are `fields` of the pattern's schema, in the order
    id, ts, time (with a time text), `attributes`, and `match` for a complex event."""

    var: str
    kleene: bool
    nested: bool  # bound to complex events (matches of another pattern)
    attributes: tuple[tuple[str, pa.DataType], ...]
    fields: slice


@dataclass(frozen=True)
class PatternColumns:
    """A pattern's Parquet layout: its schema and how each column is made."""

    spec: PatternSpec
    variables: tuple[VariableColumns, ...]
    emit: tuple[tuple[str, pa.DataType], ...]
    time_text: Callable[[np.ndarray, np.ndarray | None], pa.Array] | None  # as written
    schema: pa.Schema


def match_layouts(job: JobLayoutSource) -> dict[str, PatternColumns]:
    """Every pattern's layout, from the job's data: attribute types as the reader reads them
    (`merged_attribute_types`), a complex event's as its pattern emits them. `SpecError` when
    two columns of one pattern would have one name (an attribute or emitted attribute named
    as a column the layout adds)."""
    reader = job.data.get("reader") or {}
    kinds = merged_attribute_types((reader.get("attributes") or {}).values())
    emit_types = {p["name"]: p.get("emit_types", {}) for p in job.data.get("patterns", ())}
    text = _time_text(reader)
    return {spec.name: _layout(spec, job, kinds, emit_types, text) for spec in job.patterns}


def _time_text(reader: Mapping[str, Any]
               ) -> Callable[[np.ndarray, np.ndarray | None], pa.Array] | None:
    """The writer of times as the input wrote them: with a `time_format` whose letters the
    in-process reader reads, else None (no time columns)."""
    pattern = (reader.get("source") or {}).get("time_format")
    if not pattern:
        return None
    try:
        return time_formatter(pattern, reader["time_unit"])
    except TimeFormatError:
        return None


def _layout(spec: PatternSpec, job: JobLayoutSource, kinds: Mapping[str, str],
            emit_types: Mapping[str, Mapping[str, str]],
            text: Callable[[np.ndarray, np.ndarray | None], pa.Array] | None
            ) -> PatternColumns:
    fields: list[pa.Field] = []
    owners: dict[str, str] = {}

    def add(name: str, kind: pa.DataType, owner: str) -> None:
        if name in owners:
            raise ColumnClash(spec.name, f"Parquet output would name two columns {name!r}: "
                              f"{owners[name]} and {owner}; rename the attribute to write "
                              "Parquet (JSON lines are not affected)")
        owners[name] = owner
        fields.append(pa.field(name, kind))

    add("first_ts", pa.float64(), "the match's first timestamp")
    add("last_ts", pa.float64(), "the match's last timestamp")
    if text is not None:
        add("first_time", pa.string(), "the match's first time as the input wrote it")
        add("last_time", pa.string(), "the match's last time as the input wrote it")
    variables = []
    for operand in spec.positive:
        var, start = operand.var, len(fields)
        nested = job.is_complex(operand.type)
        declared = (emit_types.get(operand.type, {}) if nested else
                    {a: kinds.get(a, "string") for a in job.types.get(operand.type, ())})
        # an attribute `id` is the events' own id (source.id_column), already `{var}.id`
        attributes = tuple((a, ARROW_TYPES[k]) for a, k in declared.items()
                           if nested or a != "id")
        kleene = operand.kind == KLEENE
        listed = pa.list_ if kleene else (lambda kind: kind)
        add(f"{var}.id", listed(pa.int64()), f"variable {var}'s event id")
        add(f"{var}.ts", listed(pa.float64()), f"variable {var}'s timestamp")
        if text is not None:
            add(f"{var}.time", listed(pa.string()), f"variable {var}'s time as the input "
                "wrote it")
        for attr, kind in attributes:
            add(f"{var}.{attr}", listed(kind), f"attribute {attr!r} of {operand.type}")
        if nested:
            add(f"{var}.match", listed(pa.string()), f"variable {var}'s match of "
                f"{operand.type}")
        variables.append(VariableColumns(var, kleene, nested, attributes,
                                         slice(start, len(fields))))
    emit = tuple((a, ARROW_TYPES[emit_types.get(spec.name, {}).get(a, "string")])
                 for a in spec.emit)
    for attr, kind in emit:
        add(attr, kind, f"emitted attribute {attr!r}")
    return PatternColumns(spec, tuple(variables), emit, text, pa.schema(fields))


def table_rows(layout: PatternColumns, table: Table,
               matches: Matches) -> Iterator[pa.RecordBatch]:
    """The matches as record batches of the layout's schema, `RENDER_ROWS` matches each."""
    for first in range(0, matches.count, RENDER_ROWS):
        last = min(matches.count, first + RENDER_ROWS)
        yield _batch(layout, table, Matches(
            {v: ranks[first:last] for v, ranks in matches.single.items()},
            {v: sets[first:last] for v, sets in matches.kleene.items()}, last - first))


def text_rows(layout: PatternColumns, texts: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """Matches given as their JSON text (format doc, "matches") as record batches of the
    layout's schema: each chunk's events become a table (`_objects_table`) made into rows as
    `table_rows` makes them."""
    for first in range(0, len(texts), RENDER_ROWS):
        table, parts = _objects_table(layout, [json.loads(t)
                                               for t in texts[first:first + RENDER_ROWS]])
        for matches in parts:
            yield _batch(layout, table, matches)


def _batch(layout: PatternColumns, table: Table, matches: Matches) -> pa.RecordBatch:
    """One chunk of matches as a record batch."""
    count, fields = matches.count, layout.schema
    firsts: dict[str, np.ndarray] = {}
    lasts: dict[str, np.ndarray] = {}
    columns: list[pa.Array] = []
    for variable in layout.variables:
        var = variable.var
        if var in matches.single:
            firsts[var] = lasts[var] = matches.single[var]
            columns += _event_columns(layout, variable, table, matches.single[var])
        elif var in matches.kleene:
            flat, starts = flat_sets(matches.kleene[var])
            firsts[var], lasts[var] = flat[starts[:-1]], flat[starts[1:] - 1]
            offsets = pa.array(starts, pa.int32())
            columns += [pa.ListArray.from_arrays(offsets, values) for values in
                        _event_columns(layout, variable, table, flat)]
        else:  # an OR's match binds one variable
            columns += [pa.nulls(count, f.type) for f in
                        list(fields)[variable.fields]]
    first, first_zone = _earliest(table, list(firsts.values()), np.argmin)
    last, last_zone = _earliest(table, list(lasts.values()), np.argmax)
    times = [pa.array(first, pa.float64()), pa.array(last, pa.float64())]
    if layout.time_text is not None:
        times += [layout.time_text(first, first_zone), layout.time_text(last, last_zone)]
    values = emitted(layout.spec, table, firsts, lasts, count)
    columns += [_arrow(values[attr], kind) for attr, kind in layout.emit]
    return pa.RecordBatch.from_arrays(times + columns, schema=fields)


def _event_columns(layout: PatternColumns, variable: VariableColumns, table: Table,
                   ranks: np.ndarray) -> list[pa.Array]:
    """The variable's columns of the events at `ranks`, one value each."""
    stamps = table.ts[ranks]
    columns = [pa.array(table.ids[ranks], pa.int64()), pa.array(stamps, pa.float64())]
    if layout.time_text is not None:
        columns.append(layout.time_text(stamps, _zones(table, ranks)))
    columns += [_arrow(table.column(attr)[ranks], kind) for attr, kind in variable.attributes]
    if variable.nested:
        columns.append(_arrow(table.columns[MATCH_COLUMN][ranks], pa.string()))
    return columns


def _zones(table: Table, ranks: np.ndarray) -> np.ndarray | None:
    """The zone offsets the events at `ranks` were written with (None: not known, UTC; a
    complex event, whose table holds no offsets, counts as UTC)."""
    zones = table.columns.get(EVENT_ZONE)
    if zones is None:
        return None
    found = zones[ranks]
    if found.dtype.kind in "iu":
        return found
    if found.dtype.kind == "f":  # beside complex events (NaN)
        return np.nan_to_num(found).astype(np.int64)
    return np.fromiter((0 if v is None or v != v else int(v) for v in found), np.int64,
                       len(found))


def _earliest(table: Table, ranks: list[np.ndarray], pick: Callable[..., np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """Per match, the timestamp `pick` (argmin / argmax) chooses among its variables' events
    at `ranks`, and that event's zone offset."""
    stamps = np.stack([table.ts[r] for r in ranks])
    chosen = pick(stamps, axis=0)
    columns = np.arange(stamps.shape[1])
    zones = [_zones(table, r) for r in ranks]
    if any(z is None for z in zones):
        return stamps[chosen, columns], None
    return stamps[chosen, columns], np.stack(zones)[chosen, columns]


def _arrow(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """Values in any of the matcher's column forms (`table.column_values`) as Arrow values of
    `kind`: NaN and None missing."""
    array = pa.array(values, from_pandas=True)
    return array if array.type == kind else array.cast(kind)


def _without_zones(value: Any) -> Any:
    """A match's events as the matches' text writes them: without the zone offsets
    (`EVENT_ZONE`) the texts made for Spark's writer carry."""
    if isinstance(value, dict):
        return {k: _without_zones(v) for k, v in value.items() if k != EVENT_ZONE}
    if isinstance(value, list):
        return [_without_zones(v) for v in value]
    return value


def _objects_table(layout: PatternColumns,
                   objects: list[dict]) -> tuple[Table, list[Matches]]:
    """Match objects as the table of their events (one row per event a variable binds, in
    no particular order) and the matches over it, one `Matches` per set of variables bound
    (an OR binds one)."""
    events: list[dict] = []
    bound: list[dict[str, Any]] = []
    groups: dict[tuple[str, ...], list[int]] = {}
    for index, match in enumerate(objects):
        ranks: dict[str, Any] = {}
        for variable in layout.variables:
            found = match["events"].get(variable.var)
            if found is None:
                continue
            if variable.kleene:
                ranks[variable.var] = tuple(range(len(events), len(events) + len(found)))
                events += found
            else:
                ranks[variable.var] = len(events)
                events.append(found)
        bound.append(ranks)
        groups.setdefault(tuple(ranks), []).append(index)
    kinds = merged_attribute_types(
        {attr: _KINDS[kind] for attr, kind in v.attributes} for v in layout.variables)
    columns = {attr: _column([e.get(attr) for e in events], kind)
               for attr, kind in kinds.items()}
    if any(EVENT_ZONE in e for e in events):  # texts made for Spark's writer
        columns[EVENT_ZONE] = np.asarray([e.get(EVENT_ZONE) or 0 for e in events], np.int64)
    if any(v.nested for v in layout.variables):
        columns[MATCH_COLUMN] = np.asarray(
            [json.dumps({"pattern": e["pattern"], "events": _without_zones(e["events"])})
             if "events" in e else None for e in events], dtype=object)
    table = Table(np.asarray([e["ts"] for e in events], dtype=np.float64),
                  np.asarray([e["id"] for e in events], dtype=np.int64),
                  np.asarray([e["type"] for e in events], dtype=object), columns)
    kleene = {v.var for v in layout.variables if v.kleene}
    parts = [Matches({v: np.asarray([bound[r][v] for r in rows], dtype=np.int64)
                      for v in names if v not in kleene},
                     {v: [bound[r][v] for r in rows] for v in names if v in kleene}, len(rows))
             for names, rows in groups.items()]
    return table, parts


_KINDS = {pa.float64(): "double", pa.int64(): "long", pa.string(): "string",
          pa.bool_(): "bool"}


def _column(values: list, kind: str) -> np.ndarray:
    """JSON values of one attribute as the reader's column forms (`table.column_values`):
    numbers as float64 with NaN, whole numbers as int64 (exact), the rest as objects."""
    present = np.fromiter((v is not None for v in values), bool, len(values))
    if kind == "double":
        return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    if kind == "long":
        return whole_numbers(np.asarray([int(v) if v is not None else 0 for v in values],
                                        dtype=np.int64), present)
    if kind == "bool" and present.all():
        return np.asarray(values, dtype=bool)
    return np.asarray(values, dtype=object)
