"""The workload's statistics measured on a live stream, over a sliding horizon of event time:
the events of [watermark − horizon, watermark) (at most its latest `MAX_EVENTS`) are kept as
read (their type, time, id, keys,
regions and the attributes the predicates read) and summarised by `cepplan stats`'s own code
(`stats/collect.py` over `stats/local_scan.py`), so the figures are those `cepplan stats` gives
on a file of the same events: rates per type (and region), selectivities of each pattern's
predicates, occurrence models with their Markov burstiness (docs/engine.md, "Adaptive
re-planning")."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.table import Columns
from cepplan.errors import InputError
from cepplan.sources.local_source import Canonical
from cepplan.stats.collect import collect_statistics, scan_columns
from cepplan.stats.local_scan import LocalScan
from cepplan.stats.stats_file import parse_stats
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, merged_attribute_types
from cepplan.workload.model import Statistics, Workload
from cepplan.workload.source_spec import attribute_types

HORIZON_WINDOWS = 100  # default horizon: this many of the workload's largest window
SAMPLE = 20_000  # events per pattern (and tuples per predicate) for the selectivities
MAX_EVENTS = 20_000  # the latest events of the horizon measured: bounds a check's cost
MIN_TUPLES = 30  # candidate tuples a selectivity must be measured on to be used


def default_horizon(workload: Workload) -> float:
    """`HORIZON_WINDOWS` times the largest pattern window (time unit of the workload): long
    enough for each of the rate's 30 batch-means blocks to hold several windows."""
    windows = [p.window for p in workload.patterns if p.window]
    return HORIZON_WINDOWS * max(windows, default=1.0)


class OnlineStatistics:
    """The horizon's events, fed by `observe` (a `StreamMatcher` observer) and summarised on
    demand by `measure`."""

    def __init__(self, workload: Workload, horizon: float, *, time_step: float = 1.0,
                 sample: int = SAMPLE, seed: int = 0, max_events: int = MAX_EVENTS):
        self.workload = workload
        self.horizon = horizon
        self.max_events = max_events
        self.options = {"time_step": time_step, "sample": sample, "seed": seed}
        self.columns, self.group_columns = scan_columns(workload)
        self.kinds = merged_attribute_types(attribute_types(workload).values())
        self.parts: list[Columns] = []
        self.latest = -math.inf  # the largest time observed

    def observe(self, rows: Columns) -> None:
        """Keep a read's good rows (the columns the statistics read) that a later horizon
        can hold: none more than the horizon and `max_delay` behind the latest."""
        if not len(rows):
            return
        self.latest = max(self.latest, float(rows[EVENT_TS].max()))
        names = [EVENT_TYPE, EVENT_TS, EVENT_ID, *(c for c in self.columns if c in rows.data)]
        needed = rows[EVENT_TS] >= self.latest - self.workload.options.max_delay - self.horizon
        self.parts.append(rows.take(needed if not needed.all() else slice(None), names))

    def events(self, until: float) -> Columns:
        """The events of [until − horizon, until), in reading order, or of its end holding
        the latest `max_events` (those at or after the time of the `max_events`-th latest);
        older ones are dropped."""
        start = until - self.horizon
        self.parts = [p.take(p[EVENT_TS] >= start) for p in self.parts]
        self.parts = [p for p in self.parts if len(p)]
        inside = [p.take(p[EVENT_TS] < until) for p in self.parts]
        held = Columns.concat([p for p in inside if len(p)], [EVENT_TYPE, EVENT_TS, EVENT_ID])
        if len(held) <= self.max_events:
            return held
        stamps = held[EVENT_TS]
        start = np.partition(stamps, len(stamps) - self.max_events)[-self.max_events]
        return held.take(stamps >= start)

    def measure(self, until: float, *, per_key: bool = True) -> dict[str, Any] | None:
        """The stats document (`cepplan stats`'s) of the horizon ending at `until` (without
        its figures per key and region unless `per_key`); None while it holds no event."""
        events = self.events(until)
        if not len(events):
            return None
        scan = _HeldScan(events, self.kinds, self.workload, self.columns,
                         self.group_columns if per_key else [])
        try:
            return collect_statistics(scan, [], self.workload, per_key=per_key, **self.options)
        except InputError:  # no usable rows
            return None


def statistics_of(document: dict[str, Any], workload: Workload) -> Statistics:
    """The planner's statistics from a stats document, without the selectivities measured
    on fewer than `MIN_TUPLES` candidate tuples (a handful of rare events: the plan's own
    figure stays the better guess)."""
    measured = {pattern: {text: value for text, value in entries.items()
                          if document["selectivity_details"][pattern][text]["n"] >= MIN_TUPLES}
                for pattern, entries in document["selectivities"].items()}
    return parse_stats({**document, "selectivities": measured}, "the stream's statistics",
                       workload)


def interval_end(document: dict[str, Any], point: Statistics, side: int) -> Statistics:
    """`point` with each rate and each selectivity `statistics_of` took from the document
    at the low (`side` 0) or high (1) end of its 95 % interval."""
    rates = {name: info["rate_ci95"][side] for name, info in document["types"].items()}
    details = document["selectivity_details"]
    selectivities = {
        pattern: {text: details[pattern][text]["ci95"][side]
                  if details.get(pattern, {}).get(text, {}).get("n", 0) >= MIN_TUPLES
                  else value for text, value in entries.items()}
        for pattern, entries in point.selectivities.items()}
    return replace(point, rates={**point.rates, **rates},
                   selectivities={**point.selectivities, **selectivities})


def settled(point: Statistics, low: Statistics, high: Statistics,
            basis: Mapping[str, Any]) -> Statistics:
    """The statistics to re-plan for: each measured figure whose 95 % interval (`low` to
    `high`) holds the plan's own (`basis`, plan.json's `invariants.basis`) keeps the plan's.
    A figure from few events has a wide interval; taken as it was, the next plan's range
    could be narrower than that interval, and the stream would switch back once more events
    came (a flap the drift rule's hysteresis does not see)."""
    def kept(own: float | None, value: float, lowest: float, highest: float) -> float:
        return own if own is not None and lowest <= own <= highest else value

    own_rates = basis.get("rates") or {}
    own_selectivities = basis.get("selectivities") or {}
    rates = {name: kept(own_rates.get(name), value, low.rates[name], high.rates[name])
             for name, value in point.rates.items()}
    selectivities = {
        pattern: {text: kept((own_selectivities.get(pattern) or {}).get(text), value,
                             low.selectivities[pattern][text],
                             high.selectivities[pattern][text])
                  for text, value in entries.items()}
        for pattern, entries in point.selectivities.items()}
    return replace(point, rates=rates, selectivities=selectivities)


class _HeldScan(LocalScan):
    """`LocalScan` over events held in memory instead of files."""

    def __init__(self, events: Columns, kinds: dict[str, str], workload: Workload,
                 columns: list[str], group_columns: list[str]):
        super().__init__([], workload, columns, group_columns)
        self._events = events
        self._kinds = kinds

    def _batches(self) -> Iterator[Canonical]:
        yield canonical_batch(self._events, self._kinds)


def canonical_batch(events: Columns, kinds: dict[str, str]) -> Canonical:
    """Good events in the engine's `Columns` form as the statistics reader's batch."""
    names, codes = np.unique(np.asarray(events[EVENT_TYPE], dtype=object).astype(str),
                             return_inverse=True)
    keys, attributes = {}, {}
    for name in events.data:
        if name in (EVENT_TS, EVENT_ID, EVENT_TYPE):
            continue
        values = events[name]
        if name not in kinds:
            keys[name] = values
            continue
        present = ~pd.isna(values) if values.dtype.kind in "fO" else np.ones(len(values), bool)
        if kinds[name] in ("long", "bool"):
            blank = 0 if kinds[name] == "long" else False
            values = np.where(present, values, blank).astype(
                np.int64 if kinds[name] == "long" else bool)
        attributes[name] = (values, present)
    return Canonical(codes.astype(np.int32), list(names), events[EVENT_TS].astype(np.float64),
                     events[EVENT_ID].astype(np.int64), None, keys, attributes,
                     {name: kinds[name] for name in attributes},
                     np.full(len(events), -1, dtype=np.int8), [])
