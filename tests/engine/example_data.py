"""Thin synthetic streams of the bundled examples, small enough for the reference matcher."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from types import MappingProxyType

import pandas as pd
import pytest

from cepplan.planner.plan import DetectionPlan, Plan, trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.workload import Workload, load_workload
from tests.engine.reference_matcher import canonical, reference_matches

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# The xdist group of the test files that read six minutes of stocks by example_reference: on
# one worker, its reference is computed once.
STOCKS_REFERENCE = pytest.mark.xdist_group("stocks-reference")
THIN = {"stocks": {"duration": 120, "total_rate": 1.0},
        "network": {"duration": 60, "total_rate": 4.0, "n_keys": 2}}


def thin_example(name: str, seed: int = 3) -> tuple[Workload, pd.DataFrame]:
    """An example workload and a thin stream of its events (ids = row positions)."""
    workload = load_workload(EXAMPLES / name / "workload.json")
    events = synthesize(workload, seed=seed, truth_draws=1000, **THIN[name]).events
    return workload, events


def example_reference(name: str, seed: int = 3, **synth: float) -> tuple[
        Workload, pd.DataFrame, dict[str, list]]:
    """An example workload, a synthetic stream of its events (THIN's size unless `synth` says)
    and the brute-force reference's canonical matches per pattern, sorted. Computed once per
    test process (the reference takes ~10 s on six minutes of stocks) and handed out as copies."""
    workload, events, expected = _example_reference(name, seed, tuple(sorted(
        (synth or THIN[name]).items())))
    return workload, events.copy(), {k: list(v) for k, v in expected.items()}


@cache
def _example_reference(name: str, seed: int, synth: tuple) -> tuple[
        Workload, pd.DataFrame, dict[str, list]]:
    workload = load_workload(EXAMPLES / name / "workload.json")
    events = synthesize(workload, seed=seed, truth_draws=1000, **dict(synth)).events
    return workload, events, {pattern: sorted(map(canonical, found)) for pattern, found
                              in reference_matches(workload, events).items()}


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
