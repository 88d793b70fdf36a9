"""The detection latency a live stream measured (`cepplan run --follow`'s metrics.json),
read for the report (`cepplan compare --stream-metrics`) and shown per pattern beside the
latency bound the workload sets and the plan's steps."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cepplan.errors import InputError
from cepplan.fileio import read_json
from cepplan.report.blocks import Note, Num, Section, Table
from cepplan.report.plan_switches import read_replans

FIGURES = ("p50", "p99", "max")


def read_stream_metrics(path: Path, patterns: list[str]) -> dict[str, Any]:
    """The `stream` section of a --follow run's metrics.json, checked: per pattern of the
    workload, the detection latency figures (seconds) and the latency bound."""
    metrics = read_json(path)
    stream = metrics.get("stream") if isinstance(metrics, dict) else None
    if not isinstance(stream, dict):
        raise InputError.single(str(path), "", "has no \"stream\" section: give the "
                                "metrics.json of a `cepplan run --follow` run")
    latency = stream.get("detection_latency_seconds")
    bounds = stream.get("latency_bound", {})
    if not isinstance(latency, dict) or not isinstance(bounds, dict):
        raise InputError.single(str(path), "stream.detection_latency_seconds",
                                "expected an object of figures per pattern")
    for section, figures_by_name in (("detection_latency_seconds", latency),
                                     ("latency_bound", bounds)):
        for name in figures_by_name:
            if name not in patterns:
                raise InputError.single(str(path), f"stream.{section}.{name}", "no pattern "
                                        "of the workload has this name: the stream ran "
                                        "another workload")
    for name, figures in latency.items():
        if not isinstance(figures, dict) or not all(
                isinstance(figures.get(k), int | float) for k in (*FIGURES, "matches")):
            raise InputError.single(str(path), f"stream.detection_latency_seconds.{name}",
                                    f"expected numbers {', '.join(FIGURES)} and matches")
    return {"engine": metrics.get("engine", "local"),
            "trigger_seconds": stream.get("trigger_seconds"),
            "micro_batches": stream.get("micro_batches"),
            "detection_latency_seconds": latency, "latency_bound": bounds,
            "replans": read_replans(stream, str(path))}


def stream_section(stream: Mapping[str, Any], time_unit: str) -> Section:
    """Per pattern: matches, detection latency p50 / p99 / max, and the bound beside them."""
    latency, bounds = stream["detection_latency_seconds"], stream["latency_bound"]
    rows = []
    for name in sorted(set(latency) | set(bounds)):
        figures, bound = latency.get(name, {}), bounds.get(name) or {}
        rows.append((name, Num(figures.get("matches", 0)),
                     *(Num(figures.get(k), " s") for k in FIGURES),
                     Num(bound.get("max_time"), f" {time_unit}"), Num(bound.get("max_steps")),
                     Num(bound.get("plan_steps"))))
    table = Table(("pattern", "matches", "latency p50", "latency p99", "latency max",
                   "bound max_time", "bound max_steps", "plan steps"), tuple(rows))
    trigger = stream.get("trigger_seconds")
    return Section("Detection latency on a live stream", "stream-latency", (
        Note("Measured by `cepplan run --follow`"
             + (" on Spark" if stream.get("engine") == "spark" else "")
             + ": per match, the wall time it was written "
             "minus the arrival time of the last of its events to arrive"
             + (f", at {trigger:g}-second micro-batches" if trigger else "")
             + ". Beside it the pattern's latency bound from the workload (in event time) "
             "and the steps of the plan's detection."),
        table))
