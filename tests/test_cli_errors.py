"""Errors that used to cascade or mislead: one problem reported once, with the fix it needs."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import EXAMPLES, ROOT
from tests.in_process import cepplan


def _cepplan(*args: str) -> subprocess.CompletedProcess:
    return cepplan(*args, cwd=ROOT)


def _stocks_with(tmp_path, predicate: str):
    raw = json.loads((EXAMPLES / "stocks" / "workload.json").read_text())
    pattern = next(p for p in raw["patterns"]
                   if raw.get("statistics", {}).get("selectivities", {}).get(p["name"]))
    pattern["where"] = [predicate, *pattern.get("where", [])]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    return path, pattern["name"]


def test_a_predicate_typo_is_reported_once_not_as_an_unknown_pattern(tmp_path):
    path, name = _stocks_with(tmp_path, "a.prize > 0")
    done = _cepplan("validate", str(path))
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "has no attribute 'prize'" in errors[0]
    assert f"selectivities.{name}" not in done.stderr and "unknown pattern" not in done.stderr


def test_a_backwards_comparison_suggests_the_operator_meant(tmp_path):
    path, _ = _stocks_with(tmp_path, "a.peak =< a.low")
    done = _cepplan("validate", str(path))
    assert done.returncode == 2
    assert "'=<' is not an operator; use '<='" in done.stderr
    assert "    a.peak =< a.low\n           ^" in done.stderr


def test_optimize_on_an_event_file_says_a_workload_was_expected(tmp_path):
    done = _cepplan("optimize", str(EXAMPLES / "fraud" / "events.csv"),
                    "-o", str(tmp_path / "p.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "events.csv: expected a workload.json, but this is not valid JSON" in done.stderr
    assert not (tmp_path / "p.json").exists()


def test_optimize_on_a_plan_says_it_is_a_plan(tmp_path):
    plan = tmp_path / "plan.json"
    assert _cepplan("optimize", str(EXAMPLES / "fraud" / "workload.json"), "-q",
                    "-o", str(plan)).returncode == 0
    done = _cepplan("optimize", str(plan), "-o", str(tmp_path / "p2.json"))
    assert done.returncode == 2
    assert f"error: {plan}: format: this is a plan, not a workload" in done.stderr
