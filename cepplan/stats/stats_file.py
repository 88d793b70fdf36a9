"""`stats.json` (format `cepplan.stats/1`): reading it for the planner, over inline statistics,
and writing it (checked against the shipped JSON Schema, then written atomically).

Its `rates`, `selectivities` and `models` have exactly the shape of the workload's inline
`statistics` (format doc, "statistics (inline)") and win over them, entry by entry.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema

from cepplan.errors import InputError, Problem
from cepplan.fileio import read_json, write_json_atomic
from cepplan.workload.loader import read_statistics
from cepplan.workload.model import Statistics, Workload
from cepplan.workload.paths import json_path

FORMAT = "cepplan.stats/1"


def read_stats(path: str | Path, workload: Workload) -> Statistics:
    """Read a `stats.json` for `workload`; its entries override the workload's inline ones."""
    return parse_stats(read_json(path), str(path), workload)


def parse_stats(raw: Any, file: str, workload: Workload) -> Statistics:
    """Statistics from an already-parsed `stats.json` document (`file` names it in errors)."""
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InputError.single(file, "format", f"not a cepplan statistics file "
                                f"(expected \"format\": \"{FORMAT}\")")
    problems: list[Problem] = []

    def error(where: tuple, message: str) -> None:
        problems.append(Problem(file, json_path(where), message))

    measured = read_statistics(raw, workload.event_types, workload.patterns_by_name,
                               workload.time_unit, error)
    if problems:
        raise InputError(problems)
    return merge_statistics(workload.statistics, measured)


def merge_statistics(base: Statistics, override: Statistics) -> Statistics:
    """`override`'s entries win over `base`'s, per type and per predicate."""
    selectivities = {k: dict(v) for k, v in base.selectivities.items()}
    for pattern, entries in override.selectivities.items():
        selectivities.setdefault(pattern, {}).update(entries)
    return Statistics(
        rates=MappingProxyType({**base.rates, **override.rates}),
        selectivities=MappingProxyType({k: MappingProxyType(v) for k, v in selectivities.items()}),
        models=MappingProxyType({**base.models, **override.models}),
    )


@lru_cache(maxsize=1)
def stats_schema() -> dict[str, Any]:
    """The JSON Schema of `cepplan.stats/1`, as shipped in the package."""
    text = resources.files("cepplan.stats").joinpath("stats.schema.json").read_text()
    return json.loads(text)


def schema_problems(document: Any, file: str) -> list[Problem]:
    """Every violation of the stats schema, with its JSON path."""
    validator = jsonschema.Draft202012Validator(stats_schema())
    return [Problem(file, json_path(e.absolute_path), e.message)
            for e in sorted(validator.iter_errors(_plain(document)),
                            key=lambda e: list(map(str, e.absolute_path)))]


def write_stats(document: dict[str, Any], path: str | Path) -> None:
    """Check `document` against the schema and write it atomically; a document that does not
    fit is a bug, reported as an error rather than written."""
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
