"""`stats.json` (format `cepplan.stats/1`): reading it for the planner, over inline statistics,
and writing it (checked against the shipped JSON Schema, then written atomically).

Its `rates`, `selectivities` and `models` have exactly the shape of the workload's inline
`statistics` (format doc, "statistics (inline)") and win over them, entry by entry. The file
records the digest of the workload it was measured for (`workload_digest`) and its `time_unit`:
another workload's statistics are refused; another time unit is converted, and said so.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cepplan import schema_check
from cepplan.errors import InputError, Problem, json_path
from cepplan.file_kinds import check_kind
from cepplan.fileio import read_json, write_json_atomic
from cepplan.stats.keyed_file import keyed_in_time_unit, read_keyed
from cepplan.workload.durations import SECONDS_PER_UNIT
from cepplan.workload.model import Statistics, Workload
from cepplan.workload.statistics_section import merge_statistics, read_statistics

FORMAT = "cepplan.stats/1"


def read_stats(path: str | Path, workload: Workload,
               notes: list[str] | None = None) -> Statistics:
    """Read a `stats.json` for `workload`; its entries override the workload's inline ones.

    A file measured in another time unit is converted; the sentence saying so is appended to
    `notes` for the caller to print."""
    return parse_stats(read_json(path), str(path), workload, notes)


def parse_stats(raw: Any, file: str, workload: Workload,
                notes: list[str] | None = None) -> Statistics:
    """Statistics from an already-parsed `stats.json` document (`file` names it in errors)."""
    check_kind(raw, file, "statistics")
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InputError.single(file, "format", f"not a cepplan statistics file "
                                f"(expected \"format\": \"{FORMAT}\")")
    problems = schema_problems(raw, file)
    if problems:
        raise InputError(problems)
    digest = measured_for(raw)
    if digest and not workload.made_for(digest):
        older = ("" if workload.file_digest else "; statistics measured by an older cepplan "
                 "record the digest of the workload file's bytes, which only `cepplan optimize "
                 "--stats` with that file can check")
        raise InputError.single(file, "workload_digest", f"measured for another workload (or "
                                f"another version of {workload.path}): run `cepplan stats` "
                                f"again for this one{older}")
    unit = raw.get("time_unit", workload.time_unit)
    if unit != workload.time_unit:
        raw = in_time_unit(raw, unit, workload.time_unit)
        if notes is not None:
            notes.append(f"{file} is measured per {unit}; its rates were converted to per "
                         f"{workload.time_unit} (x {_factor(unit, workload.time_unit):g})")
    problems = []

    def error(where: tuple, message: str) -> None:
        problems.append(Problem(file, json_path(where), message))

    measured = read_statistics(raw, workload.event_types, workload.patterns_by_name,
                               workload.time_unit, error)
    keyed = read_keyed(raw.get("keyed", {}), workload, error)
    if problems:
        raise InputError(problems)
    return replace(merge_statistics(workload.statistics, measured),
                   keyed=MappingProxyType(keyed))


def measured_for(document: dict[str, Any]) -> str:
    """The digest of the workload a statistics document was measured for ("" if unknown)."""
    nested = document.get("workload")
    return document.get("workload_digest") or (
        nested.get("digest", "") if isinstance(nested, dict) else "")


def in_time_unit(document: dict[str, Any], unit: str, target: str) -> dict[str, Any]:
    """The planner's entries of `document` with rates per `target` instead of per `unit`, and
    numeric Markov time steps in `target` (string durations carry their own unit)."""
    factor = _factor(unit, target)
    models = {}
    for name, model in document.get("models", {}).items():
        step = model.get("time_step")
        if isinstance(step, (int, float)) and not isinstance(step, bool):
            model = {**model, "time_step": step / factor}
        models[name] = model
    return {**document, "time_unit": target, "models": models,
            "rates": {name: rate * factor for name, rate in document.get("rates", {}).items()},
            "keyed": keyed_in_time_unit(document.get("keyed", {}), factor)}


def observed_span(document: dict[str, Any], workload: Workload) -> float | None:
    """The time the measured events span (`observed.span`), in the workload's time unit;
    None when the document does not record it. For a document `parse_stats` accepted."""
    observed = document.get("observed")
    span = observed.get("span") if isinstance(observed, dict) else None
    if not isinstance(span, int | float) or isinstance(span, bool) or not span > 0:
        return None
    unit = document.get("time_unit", workload.time_unit)
    return float(span) / _factor(unit, workload.time_unit)


def _factor(unit: str, target: str) -> float:
    """Multiply a rate per `unit` by this to get it per `target`."""
    return SECONDS_PER_UNIT[target] / SECONDS_PER_UNIT[unit]


def stats_schema() -> dict[str, Any]:
    """The JSON Schema of `cepplan.stats/1`, as shipped in the package."""
    return schema_check.shipped_schema("cepplan.stats", "stats.schema.json")


def schema_problems(document: Any, file: str) -> list[Problem]:
    """Every violation of the stats schema (the first few), with its JSON path."""
    return schema_check.schema_problems(_plain(document), stats_schema(), file)


def write_stats(document: dict[str, Any], path: str | Path,
                workload: Workload | None = None) -> None:
    """Stamp the workload's digest and time unit, check `document` against the schema and
    write it atomically; a document that does not fit is a bug, reported rather than written."""
    if workload is not None:
        document = {**document, "workload_digest": workload.digest,
                    "time_unit": workload.time_unit}
    elif measured_for(document):
        document = {**document, "workload_digest": measured_for(document)}
    problems = schema_problems(document, str(path))
    if problems:
        raise ValueError("statistics document does not fit its schema:\n"
                         + "\n".join(p.render() for p in problems))
    write_json_atomic(path, document)


def _plain(value: Any) -> Any:
    """NaN and infinities as null, as orjson writes them, so the schema sees the file's values."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
