"""Predicted partial matches of a plan whose join order starts with a pulled variable, against
the in-process engine's count (metrics.json `partial_matches`): a pulled variable's events reach
the matcher only around a partial match of its earlier steps, so a prefix without those counts
only the delivered share (formerly all of the variable's events: 4.26x the measured figure on
a keyed AND of 4 of `python -m benchmarks keyed`)."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.planner.plan import DetectionPlan, PatternPlan, Plan
from cepplan.report.compare import PartialMatches
from cepplan.stats.stats_file import read_stats
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload.loader import load_workload
from tests.hostile import conftest as hostile

cli = hostile.cli  # the fixture: the real `cepplan` entry point, in-process

WORKLOAD = {
    "format": "cepplan.workload/1", "name": "pulled-first", "time_unit": "s",
    "source": {"format": "csv", "header": True, "type_column": "event", "time_column": "ts",
               "key_columns": ["k"]},
    "event_types": {t: {"attributes": {"k": "string", "x": "double"}} for t in ("R", "F", "G")},
    "patterns": [{"name": "p", "structure": ["AND", "r:R", "f:F", "g:G"],
                  "partition_by": ["k"], "within": 4}]}
RATES = {"R": 0.1, "F": 2.0, "G": 1.5}  # R rare: pushed first, F and G pulled around it


def _plan(workload, steps: list[list[str]], order: list[str]) -> Plan:
    body = PatternPlan("p", DetectionPlan(tuple(frozenset(s) for s in steps)), tuple(order))
    return Plan(MappingProxyType({"p": body}), workload.path, workload.digest)


@pytest.mark.parametrize("order", [["f", "g", "r"], ["g", "r", "f"], ["r", "f", "g"]])
def test_prediction_counts_only_the_pulled_events(cli, tmp_path: Path, order):
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    workload = load_workload(str(tmp_path / "w.json"))
    for name, seed in (("training.csv", 1), ("events.csv", 2)):
        made = synthesize(workload, duration=2000, seed=seed, rates=RATES, n_keys=8,
                          truth_draws=100)
        write_events(made.events, workload, tmp_path / name)
    measured = cli("stats", tmp_path / "training.csv", "-w", tmp_path / "w.json", "-o",
                   tmp_path / "stats.json", "-q")
    assert measured.code == 0, measured.err
    statistics = read_stats(tmp_path / "stats.json", workload)
    plan = _plan(workload, [["r"], ["f"], ["g"]], order)
    metrics = run_local_job(job_data(workload, plan), [str(tmp_path / "events.csv")],
                            tmp_path / "out", say=lambda _text: None)
    counted = metrics["partial_matches"]["p"]["per_window"]
    predicted = PartialMatches(workload, statistics).of(
        "p", order, plan.patterns["p"].detection.steps)
    assert counted > 0.5
    assert predicted == pytest.approx(counted, rel=0.25), (predicted, counted)
