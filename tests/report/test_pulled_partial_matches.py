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


def _keyed_case(cli, directory: Path, seed: int):
    """The workload, training and measured events (8 keys) and `cepplan stats` of the
    training ones, in `directory`; the workload."""
    (directory / "w.json").write_text(json.dumps(WORKLOAD))
    workload = load_workload(str(directory / "w.json"))
    for name, offset in (("training.csv", 0), ("events.csv", 1)):
        made = synthesize(workload, duration=2000, seed=seed + offset, rates=RATES, n_keys=8,
                          truth_draws=100)
        write_events(made.events, workload, directory / name)
    measured = cli("stats", directory / "training.csv", "-w", directory / "w.json", "-o",
                   directory / "stats.json", "-q")
    assert measured.code == 0, measured.err
    return workload


def _plan(workload, steps: list[list[str]], order: list[str]) -> Plan:
    body = PatternPlan("p", DetectionPlan(tuple(frozenset(s) for s in steps)), tuple(order))
    return Plan(MappingProxyType({"p": body}), workload.path, workload.digest)


@pytest.mark.parametrize("order", [["f", "g", "r"], ["g", "r", "f"], ["r", "f", "g"]])
def test_prediction_counts_only_the_pulled_events(cli, tmp_path: Path, order):
    workload = _keyed_case(cli, tmp_path, 1)
    statistics = read_stats(tmp_path / "stats.json", workload)
    plan = _plan(workload, [["r"], ["f"], ["g"]], order)
    metrics = run_local_job(job_data(workload, plan), [str(tmp_path / "events.csv")],
                            tmp_path / "out", say=lambda _text: None)
    counted = metrics["partial_matches"]["p"]["per_window"]
    predicted = PartialMatches(workload, statistics).of(
        "p", order, plan.patterns["p"].detection.steps)
    assert counted > 0.5
    assert predicted == pytest.approx(counted, rel=0.25), (predicted, counted)


def test_compare_shows_predicted_and_measured_figures_of_a_keyed_workload(cli, tmp_path):
    """`cepplan compare --events` on a partitioned pattern: per plan the rows to matchers and
    the partial matches per window, each measured beside the model's (within keys); the
    predictions hold within 25 % (formerly no predicted rows, only a factor)."""
    _keyed_case(cli, tmp_path, 3)
    done = cli("compare", tmp_path / "w.json", "--stats", tmp_path / "stats.json", "--events",
               tmp_path / "events.csv", "-o", tmp_path / "r.html", "-q")
    assert done.code == 0, done.err
    runs = {r["planner"]: r for r in json.loads((tmp_path / "r.json").read_text())[
        "measured"]["runs"]}
    for name in ("trivial", "dp"):
        run = runs[name]
        assert run["predicted_rows_to_matchers"] == pytest.approx(
            run["rows_to_matchers"], rel=0.25), run
        assert run["predicted_partial_matches"] == pytest.approx(
            run["partial_matches"], rel=0.25), run
    assert runs["dp"]["rows_to_matchers"] < runs["trivial"]["rows_to_matchers"]
    page = (tmp_path / "r.md").read_text()
    assert "predicted rows" in page
