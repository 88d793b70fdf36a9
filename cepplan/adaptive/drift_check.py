"""A stream's statistics checked against its plan's invariants, on either engine: the
horizon's events kept as they are read (`online_stats.py`), measured each quarter horizon of
event time, and the drift rule (`drift.py`) applied to them. The in-process stream re-plans
on what it finds (`adaptation.py`); the Spark stream, whose job has no planner, reports it
(docs/engine.md, "Adaptive re-planning"). Its state goes into bytes and back, for Spark's
state store."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cepplan.adaptive.drift import DriftRule, DriftWatch
from cepplan.adaptive.online_stats import OnlineStatistics, interval_end, statistics_of
from cepplan.engine_adapter.local.checkpoint import decode_columns, encode_columns
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.errors import InputError
from cepplan.planner.invariants import Violation
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.model import Workload

CHECKS_PER_HORIZON = 4  # statistics measured and checked each quarter horizon of event time
NO_INVARIANTS = ("the plan records no invariants (made by an older cepplan, or changed since "
                 "it was planned): it runs as it is, without re-planning; run `cepplan "
                 "optimize` again to have them")


class DriftCheck:
    """`observe` each read's good rows; `due` and `check` after each micro-batch."""

    def __init__(self, workload: Workload, invariants: Mapping[str, Any], horizon: float):
        self.workload = workload
        self.horizon = horizon
        self.online = OnlineStatistics(workload, horizon)
        self.rule = DriftRule(cooldown=horizon, span=horizon / 2)
        self.watch = DriftWatch(invariants, self.rule, -math.inf)
        self.next_check = -math.inf
        self.seconds = 0.0  # measuring and checking

    def observe(self, rows: Columns) -> None:
        """Keep a read's good rows for the horizons to come (a `StreamMatcher` observer)."""
        self.online.observe(rows)

    def due(self, watermark: float, first: float) -> bool:
        """Whether a check is due at `watermark`: each quarter horizon, the first once a
        whole horizon was read from `first` (the earliest event time read)."""
        if not watermark >= self.next_check:
            return False
        if self.next_check == -math.inf:
            self.next_check = first + self.horizon
            return watermark >= self.next_check
        return True

    def check(self, watermark: float) -> tuple[list[Violation], dict[str, Any] | None]:
        """Measure the horizon below `watermark` and apply the rule: the violations to
        re-plan for (none while the drift has not lasted) and the stats document measured
        (None: the horizon held no event)."""
        clock = time.perf_counter()
        self.next_check = watermark + self.horizon / CHECKS_PER_HORIZON
        document = self.online.measure(watermark, per_key=False)
        found = []
        if document is not None:
            point = statistics_of(document, self.workload)
            found = self.watch.check(watermark, point, interval_end(document, point, 0),
                                     interval_end(document, point, 1))
        self.seconds += time.perf_counter() - clock
        return found, document

    def since(self, found: list[Violation]) -> float:
        """The event time of the first check of the drift `found` (its earliest statistic's)."""
        return min(self.watch.runs[v.statistic][1] for v in found)

    def to_bytes(self) -> bytes:
        """The horizon's events and the rule's progress, for `from_bytes`."""
        held = [p for p in self.online.parts if len(p)]
        names = held[0].columns if held else [EVENT_TYPE, EVENT_TS, EVENT_ID]
        events = Columns.concat([p.take(slice(None), names) for p in held], names)
        return encode_columns(events, {
            "latest": self.online.latest, "next_check": self.next_check,
            "seconds": self.seconds, "quiet_until": self.watch.quiet_until,
            "runs": self.watch.runs})

    def from_bytes(self, blob: bytes) -> None:
        """Continue from what `to_bytes` wrote."""
        events, state = decode_columns(blob)
        self.online.parts = [events] if len(events) else []
        self.online.latest = state["latest"]
        self.next_check, self.seconds = state["next_check"], state["seconds"]
        self.watch.quiet_until = state["quiet_until"]
        self.watch.runs = {k: tuple(v) for k, v in state["runs"].items()}


def job_section(workload: Workload, invariants: Mapping[str, Any] | None, horizon: float,
                warn: Callable[[str], None]) -> dict[str, Any] | None:
    """job.json's `adaptive`: what the Spark stream's job needs to check its statistics (the
    workload's text, as its job has no other copy; the plan's invariants; the horizon).
    None, after a warning, for a plan without invariants: it runs as it is."""
    if not invariants:
        warn(NO_INVARIANTS)
        return None
    if workload.path is None:
        raise InputError.single("--adaptive", "", "the workload must be a file")
    raw = Path(workload.path).read_bytes()
    return {"horizon": horizon, "invariants": dict(invariants),
            "workload": raw.decode(), "workload_file": Path(workload.path).name,
            "workload_sha256": hashlib.sha256(raw).hexdigest()}
