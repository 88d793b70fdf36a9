"""The report's Pareto fronts of cost against latency, and why a pattern's chosen plan is not the
cheapest on its front (a latency bound, the engine's cost of steps, or events other patterns
ask for anyway) — so a reader never wonders why the planner left events on the table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cepplan.planner.plan import DetectionPlan, Plan
from cepplan.report.text import notation
from cepplan.workload.model import Workload

# each reason for a pattern's chosen plan not to be its cheapest, said of several patterns at once
REASONS = {
    "latency_bound": "a cheaper plan takes more steps than the latency bound allows",
    "engine_steps": "on the engine that runs the plan, the later steps would cost more time "
                    "than the events they save",
    "shared_events": "other patterns ask for the events a cheaper plan would save, and an "
                     "event is sent once whoever asks for it",
}


def pareto_fronts(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """Each pattern's Pareto front of (cost, latency), the chosen plan marked."""
    return {name: [{"steps": [sorted(s) for s in p.steps], "cost": p.expected_cost,
                    "latency": p.latency, "chosen": p == body.detection} for p in body.pareto]
            for name, body in plan.patterns.items()}


def pareto_notes(workload: Workload, plan: Plan) -> dict[str, dict[str, Any]]:
    """Per pattern whose chosen plan costs more than the cheapest on its front: that plan
    (`steps`, `cost`, `latency`), the `reason` (`latency_bound`, `engine_steps` or
    `shared_events`) and a sentence saying it."""
    steps = plan.provenance.get("engine_steps") or {}
    notes = {}
    for name, body in plan.patterns.items():
        costed = [p for p in body.pareto if p.expected_cost is not None]
        chosen = body.detection
        if not costed or chosen.expected_cost is None:
            continue
        cheapest = min(costed, key=lambda p: (p.expected_cost, p.latency))
        if cheapest.expected_cost >= chosen.expected_cost * (1 - 1e-9):
            continue
        reason, why = _reason(workload.pattern(name).latency, cheapest, name, steps)
        notes[name] = {"steps": [sorted(s) for s in cheapest.steps],
                       "cost": cheapest.expected_cost, "latency": cheapest.latency,
                       "reason": reason,
                       "text": f"{name} does not take its cheapest plan "
                               f"({notation([sorted(s) for s in cheapest.steps])}, "
                               f"{cheapest.expected_cost:.4g} events/{workload.time_unit} "
                               f"against {chosen.expected_cost:.4g}): {why}"}
    return notes


def _reason(latency: Any, cheapest: DetectionPlan, name: str,
            steps: Mapping[str, Any]) -> tuple[str, str]:
    bound = latency.max_steps if latency is not None else None
    if bound is not None and cheapest.latency > bound:
        return "latency_bound", (f"it takes {cheapest.latency} steps, beyond the pattern's "
                                 f"latency bound of {bound}")
    if name in steps.get("one_step", ()):
        engine = steps.get("engine", "local")
        if steps.get("seconds_saved_per_time_unit", {}).get(name, 0.0) <= 0:
            return "engine_steps", (f"on the {engine} engine, testing its later steps' "
                                    "events costs more time than the events they save")
        return "engine_steps", (f"on the {engine} engine, the steps of all patterns together "
                                "would not repay the fixed cost of a run")
    return "shared_events", ("other patterns ask for the events it would save, and an event is "
                             "sent once whoever asks for it")
