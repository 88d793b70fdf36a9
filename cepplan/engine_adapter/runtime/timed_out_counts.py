"""metrics.json's `timed_out`: per user pattern with `"timed_out": true`, its timed-out partial
matches by prefix length k, read from the match counts of its hidden patterns
(cepplan/workload/timed_out.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def with_timed_out(metrics: dict[str, Any], patterns: Iterable[Mapping[str, Any]]
                   ) -> dict[str, Any]:
    """`metrics` with `timed_out` {pattern: {k: count}} when some pattern of the job data's
    `patterns` finds timed-out partial matches; unchanged otherwise."""
    counts: dict[str, dict[str, int]] = {}
    for pattern in patterns:
        if pattern.get("timed_out"):
            found = metrics.get("matches", {}).get(pattern["name"], 0)
            counts.setdefault(pattern["reported_as"], {})[str(pattern["timed_out"])] = found
    if counts:
        metrics["timed_out"] = {name: dict(sorted(by_k.items(), key=lambda i: int(i[0])))
                                for name, by_k in counts.items()}
    return metrics
