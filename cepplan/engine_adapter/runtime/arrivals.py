"""What a live stream's engines share about emitted matches (docs/engine.md, "Live
streams"): each match's detection latency — its emit wall time minus the arrival wall time of
the last of its events to arrive — and the late events rendered as JSON lines."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson

from cepplan.engine_adapter.runtime.job import PartitionOutput
from cepplan.engine_adapter.runtime.records import ROW_COLUMN
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE


class MatchArrivals:
    """The arrival wall times of the events the next matches are made of (`arrivals`, called
    by the stream matcher before each range), and per match the latest of them (`completed`)."""

    def __init__(self) -> None:
        self._ids = np.empty(0, dtype=np.int64)
        self._times = np.empty(0)
        self._by_row = np.empty(0)

    def arrivals(self, ids: np.ndarray, times: np.ndarray) -> None:
        """The events the next matches are made of (the pool, row by row): their ids and
        arrival wall times."""
        self._by_row = times
        order = np.argsort(ids, kind="stable")
        self._ids, self._times = ids[order], times[order]

    def completed(self, out: PartitionOutput) -> np.ndarray:
        """Per match, the arrival wall time of the last of its events to arrive: from the
        ranks the matcher bound (one look-up per variable), or from the text when the matches
        came as text only."""
        if out.found is None:
            return np.array([self._arrival([e["id"] for bound in
                                            orjson.loads(text)["events"].values()
                                            for e in (bound if isinstance(bound, list)
                                                      else [bound])]).max()
                             for text in out.texts()])
        table = out.found.renderer.table
        rows = table.columns.get(ROW_COLUMN)  # the pool rows, when the matcher kept them

        def arrival(ranks) -> np.ndarray:
            return (self._by_row[rows[ranks]] if rows is not None
                    else self._arrival(table.ids[ranks]))

        parts = []
        for matches in out.found.results:
            latest = np.full(matches.count, -np.inf)
            for ranks in matches.single.values():
                latest = np.maximum(latest, arrival(ranks))
            for sets in matches.kleene.values():
                latest = np.maximum(latest, [arrival(list(s)).max() for s in sets])
            parts.append(latest)
        return np.concatenate(parts) if parts else np.empty(0)

    def _arrival(self, ids) -> np.ndarray:
        """The arrival wall time of each event id (of the events given to `arrivals`)."""
        if not len(self._ids):
            return np.full(len(ids), time.time())
        where = np.minimum(np.searchsorted(self._ids, ids), len(self._ids) - 1)
        return self._times[where]


def latency_figures(seconds: Mapping[str, np.ndarray]) -> dict[str, dict[str, float | int]]:
    """Per pattern: detection latency p50, p99 and max in seconds, and how many matches."""
    return {pattern: {"matches": len(values),
                      "p50": round(float(np.percentile(values, 50)), 6),
                      "p99": round(float(np.percentile(values, 99)), 6),
                      "max": round(float(np.max(values)), 6)}
            for pattern, values in seconds.items() if len(values)}


def late_lines(late: Columns, types: dict[str, list[str]]) -> list[str]:
    """Late events as JSON lines: type, ts, id and the type's attributes (`types`)."""
    names, stamps, ids = late[EVENT_TYPE], late[EVENT_TS], late[EVENT_ID]
    lines = []
    for i in range(len(late)):
        event = {"type": str(names[i]), "ts": float(stamps[i]), "id": ids[i].item()}
        for attr in types.get(str(names[i]), ()):
            if attr in late.data:
                event[attr] = _plain(late.data[attr][i])
        lines.append(json.dumps(event))
    return lines


def _plain(value: Any) -> Any:
    """A column value as JSON: NumPy scalars as Python ones, NaN as null."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and math.isnan(value) else value
