"""Thin synthetic streams of the bundled examples, small enough for the reference matcher."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pandas as pd

from cepplan.planner.plan import DetectionPlan, Plan, trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.workload import Workload, load_workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
THIN = {"stocks": {"duration": 120, "total_rate": 1.0},
        "network": {"duration": 60, "total_rate": 4.0, "n_keys": 2}}


def thin_example(name: str, seed: int = 3) -> tuple[Workload, pd.DataFrame]:
    """An example workload and a thin stream of its events (ids = row positions)."""
    workload = load_workload(EXAMPLES / name / "workload.json")
    events = synthesize(workload, seed=seed, truth_draws=1000, **THIN[name]).events
    return workload, events


def stepwise_plan(workload: Workload) -> Plan:
    """A plan pulling one variable per step, last variable first, joined in reverse order:
    as far from the trivial plan as plans go (it must give the same matches)."""
    plan = trivial_plan(workload)
    patterns = {}
    for pattern in workload.patterns:
        order = tuple(reversed(pattern.variables))
        steps = DetectionPlan(tuple(frozenset([v]) for v in order))
        patterns[pattern.name] = replace(plan.patterns[pattern.name], detection=steps,
                                         order=order, solver="test")
    return replace(plan, patterns=MappingProxyType(patterns))
