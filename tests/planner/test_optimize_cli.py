"""`cepplan optimize` end to end: plan.json, the summary, and its errors (exit code 2)."""

from __future__ import annotations

import json

from cepplan.planner.plan import read_plan
from cepplan.workload.loader import load_workload
from tests.conftest import EXAMPLES
from tests.in_process import cepplan


def test_optimize_writes_a_plan_that_fits_the_workload(tmp_path):
    out = tmp_path / "plan.json"
    done = cepplan("optimize", str(EXAMPLES / "stocks" / "workload.json"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    plan = read_plan(out, workload)
    raw = json.loads(out.read_text())
    for name, body in raw["patterns"].items():
        assert {"detection", "pareto", "naive_cost", "solver", "order"} <= set(body)
        assert body["detection"]["expected_cost"] <= body["naive_cost"] + 1e-9
        assert body["detection"]["latency"] == plan.patterns[name].detection.latency
        assert name in done.stdout
    assert "saving" in done.stdout


def test_missing_rates_are_named(tmp_path):
    raw = json.loads((EXAMPLES / "stocks" / "workload.json").read_text())
    del raw["statistics"]["rates"]["GOOG"], raw["statistics"]["rates"]["MSFT"]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(raw))
    done = cepplan("optimize", str(path), "-o", str(tmp_path / "p.json"))
    assert done.returncode == 2
    assert "GOOG, MSFT" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "p.json").exists()


def test_an_unmeetable_latency_bound_names_the_smallest_latency(tmp_path):
    """With k = 1 by minimum cost, the child offers only its 2-step plan (rare b first, the
    frequent a pulled from the past; the §6.3 caveat: minimum cost ignores latency), so the
    parent cannot meet 1 step."""
    raw = {"format": "cepplan.workload/1", "time_unit": "s",
           "event_types": {t: {"attributes": {"v": "double"}} for t in "ABC"},
           "patterns": [{"name": "child", "structure": ["SEQ", "a:A", "b:B"], "within": 1},
                        {"name": "top", "structure": ["AND", "x:child", "z:C"], "within": 5,
                         "latency": {"max_steps": 1}}],
           "statistics": {"rates": {"A": 5.0, "B": 0.01, "C": 1.0}}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(raw))
    done = cepplan("optimize", str(path), "-o", str(tmp_path / "p.json"), "--k", "1",
                    "--strategy", "min-cost")
    assert done.returncode == 2
    assert "top" in done.stderr and "smallest achievable latency is 2" in done.stderr
    assert cepplan("optimize", str(path), "-o", str(tmp_path / "p.json")).returncode == 0
