"""Partial matches counted per join prefix, summed over slices and tasks, and written into
metrics.json's `partial_matches` (docs/engine.md); shared by the in-process engine and the
Spark job's range-local tasks, which run its stages."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import zip_longest
from typing import Any

from cepplan.engine_adapter.runtime.job import Job
from cepplan.engine_adapter.runtime.matcher import partials_per_window


def added(total: list[int], more: list[int]) -> list[int]:
    """Two per-prefix counts added (the longer's length)."""
    return [a + b for a, b in zip_longest(total, more, fillvalue=0)]


def partial_metrics(job: Job, counts: Mapping[str, list[int]], span: float,
                    windows: Mapping[str, float] | None = None) -> dict[str, dict[str, Any]]:
    """metrics.json's `partial_matches`: per pattern the partial matches its matcher built per
    join prefix length and, like `shared_nodes`, per window of the tagged rows' time span
    `span` (docs/engine.md); `windows`: the time a count window took (`positions`)."""
    span = float(span) or 1.0
    windows = windows or {}
    return {name: {"by_prefix": built, "per_window": round(partials_per_window(
                built, windows.get(name, job.pattern(name).window or 0.0), span), 4)}
            for name, built in counts.items()}
