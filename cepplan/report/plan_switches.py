"""The plan switches of an adaptive live stream (`cepplan run --follow --adaptive`'s
metrics.json, `stream.replans`), read for the report (`cepplan compare --stream-metrics`) and
shown over event time with the throughput measured before and after each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cepplan.errors import InputError
from cepplan.report import plots
from cepplan.report.blocks import Figure, Note, Num, Section, Table

NUMBERS = ("micro_batch", "watermark", "modelled_gain", "replan_seconds")
RATES = ("throughput_before", "throughput_after")


def read_replans(stream: Mapping[str, Any], path: str) -> list[dict[str, Any]]:
    """The stream's re-plans, checked ([] for a stream that did not adapt)."""
    replans = stream.get("replans", [])
    if not isinstance(replans, list):
        raise InputError.single(path, "stream.replans", "expected a list of re-plans")
    for index, record in enumerate(replans):
        good = (isinstance(record, dict)
                and all(isinstance(record.get(k), int | float) for k in NUMBERS)
                and all(record.get(k) is None or isinstance(record.get(k), int | float)
                        for k in RATES)
                and all(isinstance(record.get(k), list) for k in ("reason", "changes")))
        if not good:
            raise InputError.single(path, f"stream.replans[{index}]", "expected numbers "
                                    f"{', '.join(NUMBERS + RATES)} and lists reason, changes")
    return replans


def switches_section(replans: list[Mapping[str, Any]], time_unit: str) -> Section:
    """The re-plans in event-time order: when, why, what changed, the modelled gain, the time
    it took and the throughput before and after."""
    rows = tuple((Num(r["micro_batch"]), Num(round(r["watermark"]), f" {time_unit}"),
                  "; ".join(r["reason"]),
                  "; ".join(r["changes"]) if r.get("switched", True) and r["changes"]
                  else "kept the plan",
                  Num(r["modelled_gain"], "x"), Num(r["replan_seconds"], " s"),
                  Num(r.get("throughput_before")), Num(r.get("throughput_after")))
                 for r in replans)
    table = Table(("micro-batch", "watermark", "why", "what changed", "modelled gain",
                   "re-plan time", "events/s before", "events/s after"), rows)
    switched = [(r["watermark"], r.get("throughput_before"), r.get("throughput_after"))
                for r in replans if r.get("switched", True)]
    figure = [Figure(lambda: plots.switch_timeline(switched, time_unit,
                                                   "Plan switches over time"))] if switched else []
    return Section("Plan switches on a live stream", "plan-switches", (
        Note("Measured by `cepplan run --follow --adaptive`: each re-plan when the statistics "
             "drifted out of the plan's ranges, at the watermark it switched at, with the "
             "throughput (events per second of work) over the same number of micro-batches "
             "before and after it."),
        *figure, table))
