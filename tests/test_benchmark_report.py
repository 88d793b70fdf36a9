"""`python -m benchmarks --report FILE` writes the given benchmarks' figures into one page, with
where and when they were measured; checked on given results, no timing."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import benchmarks
from benchmarks.report import Machine, Run, describe, write_report
from tests.conftest import ROOT

MACHINE = Machine("lab-1", 2, "3.11.9", "2026-11-27 04:00 UTC", "abc1234", (3.5, 2.25, 1.0),
                  quick=True)
PLANNER = Run("planner", "Planner benchmarks: DP time by size.",
              "heuristic / DP cost: mean 1.01\n", 12.345, (4.0, 3.0, 2.0))
BROKEN = Run("stats", "Statistics benchmarks.", "partial table\n", 0.5, (1.0, 1.0, 1.0),
             failure="ValueError: no events")


def test_the_page_names_the_machine_date_commit_load_and_each_benchmarks_output(tmp_path):
    page = tmp_path / "benchmarks.md"
    write_report(page, [PLANNER, BROKEN], MACHINE, ["cli", "planner", "stats"])
    text = page.read_text()
    assert text.startswith("# Benchmark figures\n")
    for fact in ("lab-1, 2 processors, Python 3.11.9", "2026-11-27 04:00 UTC", "abc1234",
                 "3.50 / 2.25 / 1.00", "quick", "--report docs/benchmarks.md --quick"):
        assert fact in text
    assert "- run: planner, stats" in text
    assert "- not run this time: cli" in text
    planner = text.split("## planner\n", 1)[1].split("## stats", 1)[0]
    assert "Planner benchmarks: DP time by size." in planner
    assert "took 12.3 s; load average at its start 4.00 / 3.00 / 2.00" in planner
    assert "```text\nheuristic / DP cost: mean 1.01\n```" in planner
    stats = text.split("## stats\n", 1)[1]
    assert "**Failed:** `ValueError: no events`" in stats
    assert "partial table" in stats


def test_a_new_page_replaces_the_old_one_whole(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("old figures\n")
    write_report(page, [], MACHINE, ["planner"])
    text = page.read_text()
    assert "old figures" not in text
    assert "- run: none" in text and "- not run this time: planner" in text
    assert [p.name for p in tmp_path.iterdir()] == ["benchmarks.md"]


def test_every_benchmark_runs_quick_and_describes_itself():
    """`--report` runs every `bench_*.py` by its `main(quick)` and heads it with its
    description: each module has both."""
    here = Path(benchmarks.__file__).parent
    names = [m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_")]
    assert len(names) >= 18
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        assert "quick" in inspect.signature(module.main).parameters, name
        assert (module.__doc__ or "").strip(), f"{name} has no description"


def test_docs_link_only_to_benchmarks_that_exist():
    """A link `benchmarks.md#NAME` from the docs names a benchmark the page can hold."""
    here = Path(benchmarks.__file__).parent
    pages = [*ROOT.glob("docs/**/*.md"), ROOT / "README.md"]
    links = {(page.name, name) for page in pages
             for name in re.findall(r"benchmarks\.md#([\w-]+)", page.read_text())}
    assert links
    assert [link for link in links if not (here / f"bench_{link[1]}.py").is_file()] == []


def test_a_description_is_its_first_paragraph_whole():
    """A benchmark's docstring wraps its first sentence over lines: the page shows it whole
    (language's used to stop at "SEQ of three GOOG")."""
    assert describe("language").endswith("(target: next and strict at least 1x).")
    assert "\n" not in describe("language")
