"""The drifts a stream on Spark reported (its job has no planner, so it keeps its plan):
each priced by the planner after the stream, as the in-process stream would re-plan — the
plan it asks for, what changes, the modelled gain — and that plan written to
OUT/plans/plan-N.json, to restart the stream with (docs/engine.md, "Adaptive re-planning")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cepplan.adaptive.adaptation import MIN_GAIN
from cepplan.adaptive.online_stats import statistics_of
from cepplan.planner.plan import Plan, write_plan
from cepplan.workload.model import Workload


def price_drifts(stream: dict[str, Any], workload: Workload, plan: Plan, out: Path,
                 warn: Callable[[str], None]) -> None:
    """Give each record of `stream["drifts"]` the re-plan of its statistics (which it loses:
    metrics.json keeps the rates measured): `changes`, `modelled_gain`, `plan_file` (None
    when the plan would stay), or `refused` with the planner's reason (warned once)."""
    from cepplan.planner.replan import ReplanRefused, replan

    written = 0
    for record in stream.get("drifts", []):
        document = record.pop("statistics")
        record["rates"] = {name: info["rate"] for name, info in document["types"].items()}
        try:
            made = replan(workload, plan.to_json(), statistics_of(document, workload))
        except ReplanRefused as err:
            if not any("refused" in r for r in stream["drifts"]):
                warn(f"re-planning refused for the drift at watermark {record['watermark']:g}:"
                     f" {err.message}")
            record["refused"] = err.message
            continue
        better = bool(made.changes) and made.gain >= MIN_GAIN
        record.update(changes=made.changes if better else [], modelled_gain=made.gain,
                      plan_file=None)
        if better:
            written += 1
            record["plan_file"] = f"plans/plan-{written}.json"
            (out / "plans").mkdir(parents=True, exist_ok=True)
            write_plan(made.plan, out / record["plan_file"])
