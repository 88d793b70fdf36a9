"""`cepplan run` on a plan with consumer queries computes them with reuse beside the
patterns' matches: the same results and covering metrics as `cepplan cover`, and counts that
agree with the results it wrote."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cepplan.cli.app import app

MOBILE = Path(__file__).resolve().parents[2] / "examples" / "mobile"


def _invoke(*args: str) -> None:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output


def _results(out: Path) -> list[dict]:
    return [json.loads(line) for line in
            (out / "results" / "part-00000.jsonl").read_text().splitlines()]


def _without_times(covering: dict) -> dict:
    solver = {k: v for k, v in covering["solver"].items() if not k.startswith("seconds")}
    return {**covering, "solver": solver}


def test_run_gives_the_results_of_cover_on_the_mobile_example(tmp_path):
    plan = tmp_path / "plan.json"
    _invoke("optimize", str(MOBILE / "workload.json"), "-o", str(plan), "--quiet")
    events = str(MOBILE / "events.jsonl")
    _invoke("run", str(plan), events, "-o", str(tmp_path / "run"), "--engine", "local",
            "--quiet")
    _invoke("cover", str(plan), events, "-o", str(tmp_path / "cover"), "--quiet")
    ran = json.loads((tmp_path / "run" / "metrics.json").read_text())
    covered = json.loads((tmp_path / "cover" / "metrics.json").read_text())
    assert _without_times(ran["covering"]) == _without_times(covered["covering"])
    results = _results(tmp_path / "run")
    assert results == _results(tmp_path / "cover")
    assert len(results) == ran["covering"]["selections"] > 100
    executed = sum(not r["reused"] for r in results)
    assert executed == ran["covering"]["executions_with_reuse"] < len(results)
    matches = (tmp_path / "run" / "matches" / "part-00000.jsonl").read_text().splitlines()
    assert len(matches) == sum(ran["matches"].values()) > 0  # the patterns ran too
