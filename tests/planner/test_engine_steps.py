"""Multi-step plans are kept only where their steps pay in time on the engine named at plan
time: the decision is recomputed here from plan.json's own numbers and the measured constants."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from cepplan.costmodels.engine_steps import ENGINE_COSTS, SPARK_CORES
from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.stats.stats_file import observed_span
from cepplan.workload import build_workload
from cepplan.workload.loader import load_workload
from tests.conftest import EXAMPLES
from tests.in_process import cepplan


def pair_workload(rate_a: float) -> object:
    """AND(a:A, b:B) within 1 min, B at 5 events/min: pulling b after a saves the fewer
    events the more often a occurs."""
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "min",
        "event_types": {"A": {"attributes": {}}, "B": {"attributes": {}}},
        "patterns": [{"name": "pair", "structure": ["AND", "a:A", "b:B"], "within": "1min"}],
        "statistics": {"rates": {"A": rate_a, "B": 5.0}}})


def saving(engine: str, body: dict, rate_a: float, rate_b: float) -> float:
    """Seconds per minute the two-step plan (a, then b) saves: plan.json's one-step cost
    against the events the engine keeps (a pushed; a b kept when an a lies within the 1-min
    window either side: Poisson, 1 - exp(-2 rate_a)), b's events all tested."""
    costs = ENGINE_COSTS[engine]
    two = rate_a + rate_b * (1 - math.exp(-2 * rate_a))
    return costs.row * (body["naive_cost"] - two) - costs.test * rate_b


@pytest.mark.parametrize("rate_a", [0.05, 0.4])
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_two_steps_kept_exactly_when_they_save_time(engine, rate_a):
    workload = pair_workload(rate_a)
    plan = optimize(workload, workload.statistics, Settings(), engine=engine).plan.to_json()
    body = plan["patterns"]["pair"]
    expected = saving(engine, body, rate_a, 5.0)
    steps = body["detection"]["steps"]
    assert (len(steps) == 2) == (expected > 0), (engine, rate_a, expected, body)
    recorded = plan["provenance"]["engine_steps"]
    assert recorded["engine"] == engine
    assert recorded["seconds_saved_per_time_unit"]["pair"] == pytest.approx(expected, rel=1e-6,
                                                                              abs=1e-9)


def test_steps_priced_by_what_the_engine_keeps_not_by_the_predicates():
    """SEQ(a, b, c) with a rare a-b predicate: the acquisition model pulls c only around the
    few a-b pairs that pass it, but the engine keeps every c with an a and a b within the
    window before it (it does not test predicates), i.e. almost every c at these rates; the
    steps then save less than their tests cost, and the plan is one step."""
    rates = {"A": 3.0, "B": 3.0, "C": 40.0}
    workload = build_workload({
        "format": "cepplan.workload/1", "time_unit": "min",
        "event_types": {t: {"attributes": {"x": "double"}} for t in rates},
        "patterns": [{"name": "seq", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                      "where": ["a.x < b.x"], "within": "1min"}],
        "statistics": {"rates": rates, "selectivities": {"seq": {"a.x < b.x": 0.001}}}})
    plan = optimize(workload, workload.statistics, Settings()).plan.to_json()
    body = plan["patterns"]["seq"]
    kept = (1 - math.exp(-rates["A"])) * (1 - math.exp(-rates["B"]))  # an a and a b in 1 min
    costs = ENGINE_COSTS["local"]
    two = rates["A"] + rates["B"] + rates["C"] * kept  # [a, b] then [c]
    assert costs.row * (body["naive_cost"] - two) - costs.test * rates["C"] < 0
    assert body["detection"]["steps"] == [["a", "b", "c"]]
    # a one-step plan the front in events does not hold is still listed among the plans
    assert body["detection"] in body["pareto"]


def test_every_chosen_plan_is_listed_among_its_patterns_plans():
    """trading_rules: patterns taken back to one step whose front holds only cheaper plans
    of the same latency list that one-step plan too (a report marks the chosen one)."""
    workload = load_workload(EXAMPLES / "trading_rules" / "workload.json")
    plan = optimize(workload, workload.statistics, Settings()).plan.to_json()
    one_step = plan["provenance"]["engine_steps"]["one_step"]
    assert one_step
    for name, body in plan["patterns"].items():
        assert body["detection"] in body["pareto"], name
        latencies = [p["latency"] for p in body["pareto"]]
        assert latencies == sorted(latencies)


def test_spark_prices_the_in_process_stages_over_its_cores():
    """Spark's range-local plan runs the in-process stages in its tasks: the same decisions
    as in-process, the seconds saved spread over the cores, no fixed cost per run."""
    workload = pair_workload(0.4)
    plans = {e: optimize(workload, workload.statistics, Settings(), engine=e).plan
             for e in ("local", "spark")}
    assert (plans["local"].patterns["pair"].detection.steps
            == plans["spark"].patterns["pair"].detection.steps)
    saved = {e: p.provenance["engine_steps"]["seconds_saved_per_time_unit"]["pair"]
             for e, p in plans.items()}
    assert saved["spark"] == pytest.approx(saved["local"] / SPARK_CORES, abs=1e-9)
    assert ENGINE_COSTS["spark"].run == 0.0


def test_short_run_cannot_repay_a_fixed_cost(monkeypatch):
    """With a fixed cost per run (3 s, the former Spark shuffle plan's), over 1,000 minutes
    the fraud example's multi-step plans save less than it: every pattern goes back to one
    step; over 10^7 they stay."""
    monkeypatch.setitem(ENGINE_COSTS, "spark", replace(ENGINE_COSTS["spark"], run=3.0))
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    for duration, staged in ((1_000.0, False), (1e7, True)):
        plan = optimize(workload, workload.statistics, Settings(), engine="spark",
                        duration=duration).plan
        saved = plan.provenance["engine_steps"]["seconds_saved_per_time_unit"]
        pays = sum(s for s in saved.values() if s > 0) * duration > 3.0
        assert pays == staged
        multi = [n for n, p in plan.patterns.items() if len(p.detection.steps) > 1]
        assert bool(multi) == staged, (duration, multi)


def test_optimize_cli_records_the_engine(tmp_path):
    out = tmp_path / "plan.json"
    done = cepplan("optimize", EXAMPLES / "fraud" / "workload.json", "-o", out,
                   "--engine", "spark", "-q")
    assert done.returncode == 0, done.stderr
    recorded = json.loads(out.read_text())["provenance"]["engine_steps"]
    assert recorded["engine"] == "spark" and recorded["duration"] is None
    bad = cepplan("optimize", EXAMPLES / "fraud" / "workload.json", "-o", out,
                  "--engine", "flink")
    assert bad.returncode == 2 and "--engine" in bad.stderr and "Traceback" not in bad.stderr


def test_optimize_takes_the_run_length_from_the_stats_file(tmp_path, monkeypatch):
    """The fixed cost per run is repaid over the time the statistics observed: plan.json
    records the stats file's observed span, and the terminal says which patterns went back
    to one step (an engine whose tests cost 6x today's, so that some pattern's do)."""
    monkeypatch.setitem(ENGINE_COSTS, "local", replace(ENGINE_COSTS["local"], test=2e-6))
    stats, out = tmp_path / "stats.json", tmp_path / "plan.json"
    fraud = EXAMPLES / "fraud"
    done = cepplan("stats", fraud / "events.csv", "-w", fraud / "workload.json", "-o", stats,
                   "-q")
    assert done.returncode == 0, done.stderr
    # without its keyed section the file is planned on the whole stream's figures, under
    # which withdrawal_abroad_after_login's steps save little (within its keys they save
    # more: tests/planner/test_keyed_planning.py)
    document = json.loads(stats.read_text())
    del document["keyed"]
    stats.write_text(json.dumps(document))
    done = cepplan("optimize", fraud / "workload.json", "--stats", stats, "-o", out)
    assert done.returncode == 0, done.stderr
    recorded = json.loads(out.read_text())["provenance"]["engine_steps"]
    assert recorded["duration"] == json.loads(stats.read_text())["observed"]["span"] > 0
    assert recorded["one_step"], "the fraud example has a pattern whose steps do not pay"
    for name in recorded["one_step"]:
        assert f"{name}: one step on the local engine" in done.stdout


def test_observed_span_is_taken_in_the_workload_time_unit():
    """A stats.json measured per second that spans 120 s covers 2 minutes of a workload kept
    per minute; without `observed.span` the run length is unknown."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    assert workload.time_unit == "min"
    assert observed_span({"time_unit": "s", "observed": {"span": 120.0}}, workload) == 2.0
    assert observed_span({"time_unit": "min", "observed": {"span": 120.0}}, workload) == 120.0
    assert observed_span({"time_unit": "min"}, workload) is None



def test_join_orders_are_priced_until_the_deadline_then_taken_in_position_order():
    """Pricing join orders keeps the time limit: every pattern priced with time left, none
    once the deadline has passed (counted, for the plan's time note), whose variables are then
    joined in position order, negated ones last."""
    import time

    from cepplan.planner.engine_steps import priced_join_orders
    from cepplan.planner.optimize import evaluation_order

    workload = build_workload({
        "format": "cepplan.workload/1", "time_unit": "min",
        "event_types": {t: {"attributes": {"x": "long"}} for t in "ABCD"},
        "patterns": [{"name": f"p{i}", "structure": ["SEQ", "a:A", "b:B", "c:C", ["NOT", "d:D"]],
                      "where": ["b.x == c.x"], "within": "10min"} for i in range(3)],
        "statistics": {"rates": {"A": 50.0, "B": 5.0, "C": 5.0, "D": 1.0}}})
    outcome = optimize(workload, workload.statistics, Settings()).outcome
    priced, unpriced = priced_join_orders(workload, workload.statistics, outcome, math.inf)
    assert unpriced == 0 and sorted(priced) == ["p0", "p1", "p2"]
    assert all(work.order[:2] in (("b", "c"), ("c", "b")) for work in priced.values())
    priced, unpriced = priced_join_orders(workload, workload.statistics, outcome,
                                          time.perf_counter())
    assert priced == {} and unpriced == 3
    result, chosen = outcome.results["p0"], outcome.chosen["p0"]
    assert evaluation_order(result, chosen) == ("a", "b", "c", "d")
