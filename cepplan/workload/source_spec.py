"""A `Workload` as the plain, JSON-able arguments of `cepplan.workload.spark_source`.

The generated Spark job and the statistics job both call `read_events` with these, so the
reader itself never needs the workload model (it ships where cepplan is not installed).
"""

from __future__ import annotations

from typing import Any

from cepplan.errors import InputError
from cepplan.workload.model import Source, Workload


def source_dict(source: Source) -> dict[str, Any]:
    """The `source` mapping with the keys of the format doc ("source")."""
    spec: dict[str, Any] = {"format": source.format, "header": source.header,
                            "time_column": source.time_column}
    if source.columns is not None:
        spec["columns"] = list(source.columns)
    if source.fixed_type is not None:
        spec["type"] = source.fixed_type
    else:
        spec["type_column"] = source.type_column
    for key in ("time_format", "id_column"):
        if getattr(source, key) is not None:
            spec[key] = getattr(source, key)
    if source.key_columns:
        spec["key_columns"] = list(source.key_columns)
    return spec


def attribute_types(workload: Workload) -> dict[str, dict[str, str]]:
    """Primitive type -> {attribute: type}; with a fixed-type source, only that type."""
    source = workload.source
    names = ([source.fixed_type] if source is not None and source.fixed_type
             else list(workload.event_types))
    return {name: dict(workload.event_types[name].attributes) for name in names}


def reader_arguments(workload: Workload) -> dict[str, Any]:
    """Keyword arguments for `read_events` (source, attributes, time_unit); the workload must
    have a `source`, else an `InputError` naming the workload file."""
    if workload.source is None:
        raise InputError.single(workload.path or "<workload>", "source",
                                "the workload has no \"source\": add one saying how rows of "
                                "the event files become events (format doc, \"source\")")
    return {"source": source_dict(workload.source), "attributes": attribute_types(workload),
            "time_unit": workload.time_unit}
