"""`cepplan compare`: the report's figures against independent runs of each planner through
`cepplan optimize`, and the three files it writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES

EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "workload.json").exists())


def cepplan(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cepplan", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Every bundled example compared once (the CLI, as a user runs it)."""
    out = tmp_path_factory.mktemp("reports")
    for name in EXAMPLE_NAMES:
        done = cepplan("compare", str(EXAMPLES / name / "workload.json"), "-o",
                       str(out / f"{name}.html"), "-q")
        assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_report_figures_equal_separate_optimize_runs(reports, tmp_path, name):
    """Each planner's per-pattern cost and latency in report.json equal what `cepplan
    optimize` writes for that solver; trivial is the plan's naive cost."""
    report = json.loads((reports / f"{name}.json").read_text())
    planners = {p["name"]: p for p in report["planners"]}
    assert set(planners) == {"trivial", "dp", "heuristic", "dp-independent"}
    for planner, flags in {"dp": ["--solver", "dp"], "heuristic": ["--solver", "heuristic"],
                           "dp-independent": ["--solver", "dp", "--no-share"]}.items():
        plan_path = tmp_path / f"{planner}.json"
        done = cepplan("optimize", str(EXAMPLES / name / "workload.json"), "-o",
                       str(plan_path), *flags)
        assert done.returncode == 0, done.stderr
        plan = json.loads(plan_path.read_text())
        assert plan["provenance"]["total_expected_cost"] == pytest.approx(
            planners[planner]["total_cost"], rel=1e-9)
        for pattern, body in plan["patterns"].items():
            entry = planners[planner]["patterns"][pattern]
            assert entry["steps"] == body["detection"]["steps"]
            assert entry["cost"] == pytest.approx(body["detection"]["expected_cost"])
            assert entry["latency"] == body["detection"]["latency"]
            assert planners["trivial"]["patterns"][pattern]["cost"] == pytest.approx(
                body["naive_cost"])
    assert planners["trivial"]["total_cost"] == pytest.approx(
        plan["provenance"]["naive_total_cost"])
    assert report["best"] == min(planners.values(), key=lambda p: p["total_cost"])["name"]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_report_files_are_self_contained_and_complete(reports, name):
    """The page loads nothing from the network; Markdown and HTML name every pattern."""
    page = (reports / f"{name}.html").read_text()
    markdown = (reports / f"{name}.md").read_text()
    report = json.loads((reports / f"{name}.json").read_text())
    assert "<link" not in page and " src=" not in page and "@import" not in page
    assert not re.search(r"url\((?!#)", page)  # only references inside the page
    for pattern in report["workload"]["patterns"]:
        assert pattern in page and pattern in markdown
    fronts = [f for f in report["pareto"].values() if f]
    assert page.count("<svg") == 1 + len(fronts) + (1 if report.get("evaluation") else 0)
    for front in fronts:
        assert sum(p["chosen"] for p in front) == 1


def test_compare_refuses_a_directory_as_output_before_planning(tmp_path):
    (tmp_path / "report.html").mkdir()
    done = cepplan("compare", str(EXAMPLES / "fraud" / "workload.json"), "-o",
                   str(tmp_path / "report.html"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "is a directory" in done.stderr


def test_compare_bad_workload_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "cepplan.workload/1"}')
    done = cepplan("compare", str(bad), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "bad.json" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_compare_with_events_measures_every_plan_like_cepplan_run(tmp_path):
    """--events runs each plan in-process: the rows each plan sends and the matches equal what
    `cepplan run` measures for the same plan, and every plan finds the same matches."""
    example = EXAMPLES / "fraud"
    done = cepplan("compare", str(example / "workload.json"), "--events",
                   str(example / "events.csv"), "-o", str(tmp_path / "r.html"), "-q")
    assert done.returncode == 0, done.stderr
    measured = json.loads((tmp_path / "r.json").read_text())["measured"]
    assert measured["matches_equal"]
    runs = {r["planner"]: r for r in measured["runs"]}
    assert runs["trivial"]["measured_factor"] == 1.0
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", str(example / "workload.json"), "-o", str(plan), "--solver",
                   "dp", "--search", "none").returncode == 0
    for kind, name in (("plan", "dp"), ("trivial", "trivial")):
        out = tmp_path / kind
        run = cepplan("run", str(plan), str(example / "events.csv"), "-o", str(out),
                      "--plan-kind", kind, "-q")
        assert run.returncode == 0, run.stderr
        metrics = json.loads((out / "metrics.json").read_text())
        assert runs[name]["rows_to_matchers"] == metrics["rows_to_matchers"]
        assert runs[name]["matches"] == sum(metrics["matches"].values())
    assert runs["dp"]["rows_to_matchers"] < runs["trivial"]["rows_to_matchers"]
