"""`stats.json` (format `cepplan.stats/1`): reading it for the planner, over inline statistics.

Its `rates`, `selectivities` and `models` have exactly the shape of the workload's inline
`statistics` (format doc, "statistics (inline)") and win over them, entry by entry.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from cepplan.errors import InputError, Problem
from cepplan.fileio import read_json
from cepplan.workload.loader import read_statistics
from cepplan.workload.model import Statistics, Workload
from cepplan.workload.paths import json_path

FORMAT = "cepplan.stats/1"


def read_stats(path: str | Path, workload: Workload) -> Statistics:
    """Read a `stats.json` for `workload`; its entries override the workload's inline ones."""
    file = str(path)
    raw = read_json(path)
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
