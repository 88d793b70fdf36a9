"""Reading `stats.json`'s `keyed` section for the planner (`KeyedStatistics` per pattern), and
converting its figures to another time unit. The section's shape is checked by the schema;
what the schema cannot know (the workload's patterns, variables and keys) is checked here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from cepplan.workload.model import KeyedStatistics, Workload

Error = Callable[[tuple, str], None]


def read_keyed(section: Mapping[str, Any], workload: Workload,
               error: Error) -> dict[str, KeyedStatistics]:
    """Per pattern of `section` that the workload partitions by the same key: its statistics.
    A pattern or variable the workload does not have is a problem given to `error`."""
    out = {}
    for name, entry in section.items():
        where = ("keyed", name)
        pattern = workload.patterns_by_name.get(name)
        if pattern is None:
            error(where, f"unknown pattern {name!r}")
            continue
        if list(entry.get("partition_by", [])) != list(pattern.partition_by):
            error((*where, "partition_by"), f"{name} is partitioned by "
                  f"{list(pattern.partition_by)}, not {entry.get('partition_by')}: run "
                  "`cepplan stats` again for this workload")
            continue
        variables = {o.var for o in pattern.operands}
        profile = entry.get("profile", {})
        types = list(profile.get("types", []))
        classes = tuple((int(c["keys"]), MappingProxyType(dict(zip(types, c["counts"],
                                                                   strict=True))))
                        for c in profile.get("classes", []) if len(c["counts"]) == len(types))
        measured = entry.get("cooccurrence", {})
        coverage: dict[str, dict[frozenset[str], float]] = {}
        tuples: dict[frozenset[str], float] = {}
        for var, shares in measured.get("coverage", {}).items():
            for text, value in shares.items():
                members = _members(text)
                if not members | {var} <= variables:
                    error((*where, "cooccurrence", "coverage", var, text),
                          f"{name} has no variable(s) {sorted(members | {var} - variables)}")
                elif value is not None:
                    coverage.setdefault(var, {})[members] = float(value)
        for text, value in measured.get("tuples", {}).items():
            members = _members(text)
            if not members <= variables:
                error((*where, "cooccurrence", "tuples", text),
                      f"{name} has no variable(s) {sorted(members - variables)}")
            else:
                tuples[members] = float(value)
        out[name] = KeyedStatistics(
            int(entry.get("keys", 0)), float(profile.get("span", 0.0)), classes,
            MappingProxyType({v: MappingProxyType(s) for v, s in coverage.items()}),
            MappingProxyType(tuples))
    return out


def keyed_in_time_unit(section: Mapping[str, Any], factor: float) -> dict[str, Any]:
    """The section with its durations divided and its rates multiplied by `factor` (a rate
    per old unit times `factor` is per new unit)."""
    out = {}
    for name, entry in section.items():
        entry = dict(entry)
        if isinstance(entry.get("profile"), dict):
            profile = entry["profile"]
            entry["profile"] = {**profile, "span": profile.get("span", 0.0) / factor}
        measured = entry.get("cooccurrence")
        if isinstance(measured, dict) and "tuples" in measured:
            entry["cooccurrence"] = {
                **measured, "window": measured.get("window", 0.0) / factor,
                "rates": {v: r * factor for v, r in measured.get("rates", {}).items()},
                "tuples": {s: r * factor for s, r in measured["tuples"].items()}}
        out[name] = entry
    return out


def _members(text: str) -> frozenset[str]:
    return frozenset(v for v in text.split(",") if v)
