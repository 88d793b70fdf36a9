"""The workload's sections beside its patterns (`source`, `contexts`, `consumers`) checked and
built; each problem goes to `error(path, message)` with its place, as the patterns' do."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import pairwise
from types import MappingProxyType
from typing import Any

from cepplan.workload.model import (
    ConsumerOperator,
    ConsumerQuery,
    Consumers,
    Contexts,
    ContextTransition,
    EventType,
    Source,
)

Report = Callable[..., None]  # error(path, message): one problem at a JSON path
Duration = Callable[[Any, tuple], "float | None"]  # a duration in the time unit, or reported


def read_source(spec: Mapping[str, Any] | None, event_types: Mapping[str, EventType],
                error: Report) -> Source | None:
    """The `source` section: how event files are read (None when there is none)."""
    if spec is None:
        return None
    path = ("source",)
    if ("type_column" in spec) == ("type" in spec):
        error(path, "give exactly one of \"type_column\" (a column naming each row's "
                   "type) or \"type\" (one type for every row)")
    if "type" in spec and spec["type"] not in event_types:
        error((*path, "type"), f"unknown event type {spec['type']!r}")
    columns = spec.get("columns")
    if spec["format"] == "csv" and not spec.get("header", True) and not columns:
        error(path, "a CSV file without a header needs \"columns\"")
    if columns is not None:
        for key in ("type_column", "time_column", "id_column"):
            if key in spec and spec[key] not in columns:
                error((*path, key), f"column {spec[key]!r} is not in \"columns\"")
        for index, key in enumerate(spec.get("key_columns", ())):
            if key not in columns:
                error((*path, "key_columns", index), f"column {key!r} is not in "
                           "\"columns\"")
    return Source(
        format=spec["format"], header=spec.get("header", True),
        columns=tuple(columns) if columns else None,
        type_column=spec.get("type_column"), fixed_type=spec.get("type"),
        time_column=spec.get("time_column", "ts"), time_format=spec.get("time_format"),
        id_column=spec.get("id_column"), key_columns=tuple(spec.get("key_columns", ())),
    )

def read_contexts(raw: Mapping[str, Any], pattern_names: Mapping[str, int],
                  error: Report) -> Contexts | None:
    """The `contexts` section, and every pattern's context types checked against it."""
    spec = raw.get("contexts")
    for index, pattern in enumerate(raw["patterns"]):
        for j, name in enumerate(pattern.get("contexts", ())):
            if spec is None or name not in spec["types"]:
                known = ", ".join(sorted(spec["types"])) if spec else "none declared"
                error(("patterns", index, "contexts", j),
                           f"unknown context type {name!r} (context types: {known})")
    if spec is None:
        return None
    path = ("contexts",)
    types = spec["types"]
    if spec["initial"] not in types:
        error((*path, "initial"), f"initial context {spec['initial']!r} is not among "
                   f"the context types ({', '.join(sorted(types))})")
    for name, body in types.items():
        for j, pattern in enumerate(body["patterns"]):
            if pattern not in pattern_names:
                error((*path, "types", name, "patterns", j),
                           f"unknown pattern {pattern!r}")
    transitions = []
    for index, item in enumerate(spec.get("transitions", ())):
        where = (*path, "transitions", index)
        if item["on"] not in pattern_names:
            error((*where, "on"), f"unknown pattern {item['on']!r}: a transition is "
                       "triggered by a context deriving pattern")
        needed = ("from", "to") if item["action"] == "switch" else ("context",)
        for key in needed:
            if key not in item:
                error(where, f"a {item['action']} transition needs \"{key}\"")
            elif item[key] not in types:
                error((*where, key), f"unknown context type {item[key]!r}")
        transitions.append(ContextTransition(item["on"], item["action"], item.get("context"),
                                             item.get("from"), item.get("to")))
    return Contexts(
        initial=spec["initial"],
        types=MappingProxyType({k: tuple(v["patterns"]) for k, v in types.items()}),
        transitions=tuple(transitions), partition_by=tuple(spec.get("partition_by", ())),
    )

def read_consumers(spec: Mapping[str, Any] | None, event_types: Mapping[str, EventType],
                   error: Report, duration: Duration) -> Consumers | None:
    """The `consumers` section: the consumer operators and their queries."""
    if spec is None:
        return None
    path = ("consumers",)
    operators = {}
    for name, op in spec["operators"].items():
        where = (*path, "operators", name)
        event_type = event_types.get(op["event_type"])
        if event_type is None:
            error((*where, "event_type"), f"unknown event type {op['event_type']!r}")
            continue
        for key in ("attribute", "x", "y"):
            attr = op.get(key)
            if attr is None:
                if op["aggregate"] != "count" and key == "attribute":
                    error(where, f"aggregate {op['aggregate']!r} needs \"attribute\"")
                continue
            attr_type = event_type.attributes.get(attr)
            if attr_type not in ("double", "long"):
                problem = "is not an attribute" if attr_type is None else "is not numeric"
                error((*where, key), f"{attr!r} {problem} of {event_type.name}")
        if op.get("cost", 1) <= 0:
            error((*where, "cost"), f"cost must be positive, got {op['cost']}")
        operators[name] = ConsumerOperator(name, op["event_type"], op["aggregate"],
                                           op.get("attribute"), op["x"], op["y"],
                                           op.get("cost", 1.0))
    queries, ids = [], set()
    for index, q in enumerate(spec["queries"]):
        where = (*path, "queries", index)
        if q["id"] in ids:
            error((*where, "id"), f"query id {q['id']!r} is used twice")
        ids.add(q["id"])
        if q["operator"] not in spec["operators"]:
            error((*where, "operator"), f"unknown operator {q['operator']!r} "
                       f"(operators: {', '.join(sorted(spec['operators'])) or 'none'})")
        x1, y1, x2, y2 = q["region"]
        if x1 > x2 or y1 > y2:
            error((*where, "region"), "a region is [x1, y1, x2, y2] with x1 <= x2 "
                       "and y1 <= y2")
        count = q["window"].get("count")
        if count is not None and count < 1:
            error((*where, "window", "count"), f"a count window needs at least 1 "
                       f"event, got {count}")
        window_time = None
        if "time" in q["window"]:
            window_time = duration(q["window"]["time"], (*where, "window", "time"))
        for key, value in q["qor"].items():
            if not 0 <= value <= 1:
                error((*where, "qor", key), f"{key} must be in [0, 1], got {value}")
        track = tuple(tuple(point) for point in q.get("track", ()))
        if any(b[0] < a[0] for a, b in pairwise(track)):
            error((*where, "track"), "track times must not decrease")
        queries.append(ConsumerQuery(q["id"], q["operator"], (x1, y1, x2, y2), count,
                                     window_time, q["qor"]["precision"], q["qor"]["recall"],
                                     q["qor"].get("disparity"), track))
    neighbors = spec.get("neighbors", {})
    if neighbors.get("k", 1) < 1:
        error((*path, "neighbors", "k"), "k must be at least 1")
    if neighbors.get("distance", 1) <= 0:
        error((*path, "neighbors", "distance"), "distance must be positive")
    batch_time = None
    if "time" in spec.get("batch", {}):
        batch_time = duration(spec["batch"]["time"], (*path, "batch", "time"))
    return Consumers(MappingProxyType(operators), tuple(queries), neighbors.get("k"),
                     neighbors.get("distance"), batch_time)
