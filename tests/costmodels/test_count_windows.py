"""Count windows in the planner: planned as N / (the partition's total event rate); on a
Poisson stream with known rates the partial matches per join step the plan models are those
`cepplan run` measures within 10 %; a count-window pattern shares no subtree with a
time-window one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cepplan.costmodels.count_spans import count_span
from cepplan.workload import build_workload
from cepplan.workload.model import KeyedStatistics, Statistics
from tests.costmodels.test_join_orders import (
    RATES,
    _cepplan,
    _stream,
    assert_modelled,
    planned_and_measured,
)

COUNT = 40  # positions: 40 · 39 / 40² of a time window's triples, 2.5 % under the model
TOLERANCE = 0.10


def _workload(patterns: list[dict], rates: dict[str, float], **extra) -> dict:
    return {"format": "cepplan.workload/1", "time_unit": "s",
            "source": {"format": "csv", "header": True, "type_column": "event",
                       "time_column": "ts"},
            "event_types": {t: {"attributes": {"x": "long", **extra.get(t, {})}}
                            for t in rates},
            "statistics": {"rates": rates}, "patterns": patterns}


def test_count_span_is_count_over_the_partition_rate():
    """Every type with the key counts (D lacks it); with measured keys, per key."""
    rates = {"A": 2.0, "B": 1.0, "C": 1.0, "D": 5.0}
    keyed = {t: {"k": "long"} for t in "ABC"}
    raw = _workload([{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "within": "8 events",
                      "partition_by": ["k"]}], rates, **keyed)
    raw["event_types"]["D"] = {"attributes": {"x": "long"}}
    wl = build_workload(raw)
    pattern = wl.pattern("p")
    stats = Statistics(rates=rates)
    assert count_span(wl, pattern, stats) == pytest.approx(8 / 4.0)
    measured = Statistics(rates=rates, keyed={"p": KeyedStatistics(keys=4, span=1.0,
                                                                    classes=())})
    assert count_span(wl, pattern, measured) == pytest.approx(8 * 4 / 4.0)


def test_modelled_partial_matches_are_the_measured_ones(tmp_path: Path):
    where = ["a.x < b.x", "c.x >= 50"]  # independent: x uniform over 0 … 99
    raw = _workload([{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"], "where": where,
                      "within": f"{COUNT} events"}], RATES)
    raw["statistics"]["selectivities"] = {"p": {where[0]: (1 - 1 / 100) / 2, where[1]: 0.5}}
    (tmp_path / "w.json").write_text(json.dumps(raw))
    _stream(tmp_path / "events.csv", 1500.0, seed=7)
    modelled, metrics = planned_and_measured(tmp_path)
    # alive per window of the time the positions take at the known rates
    assert_modelled(modelled, metrics, COUNT / sum(RATES.values()), TOLERANCE)
    # metrics.json's own figure: the window taken as the time the input's positions took
    assert metrics["partial_matches"]["p"]["per_window"] == pytest.approx(
        sum(modelled["partial_matches_per_window"]), rel=TOLERANCE)


@pytest.mark.parametrize(("within", "shared"), [(10, True), ("40 events", False)])
def test_a_count_window_shares_no_subtree(tmp_path: Path, within, shared):
    """SEQ(a, b) is common to both patterns and worth sharing at these rates, and 40
    events take the time window's 10 s; sharing it is refused when q counts events."""
    patterns = [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                 "where": ["a.x < b.x"], "within": 10},
                {"name": "q", "structure": ["SEQ", "a:A", "b:B", "d:D"],
                 "where": ["a.x < b.x"], "within": within}]
    (tmp_path / "w.json").write_text(json.dumps(
        _workload(patterns, {"A": 1.0, "B": 1.0, "C": 1.0, "D": 1.0})))
    _cepplan("optimize", str(tmp_path / "w.json"), "-o", str(tmp_path / "plan.json"), "-q")
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert bool(plan["sharing"]["shared"]) is shared, plan["sharing"]


def test_compare_predicts_a_count_window_as_its_time_span(tmp_path: Path):
    """`cepplan compare`'s expected partial matches of a count-window pattern are those of
    the same pattern under the time window its positions take (it had none: no window)."""
    predicted = {}
    for within in (f"{COUNT} events", COUNT / sum(RATES.values())):
        raw = _workload([{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                          "where": ["a.x < b.x"], "within": within}], RATES)
        (tmp_path / "w.json").write_text(json.dumps(raw))
        _cepplan("compare", str(tmp_path / "w.json"), "-o", str(tmp_path / "report"), "-q")
        report = json.loads((tmp_path / "report.json").read_text())
        predicted[within] = [p["patterns"]["p"]["partial_matches"] for p in report["planners"]]
    counted, timed = predicted.values()
    assert all(isinstance(c, float) for c in counted)
    assert counted == pytest.approx(timed, rel=1e-9)
