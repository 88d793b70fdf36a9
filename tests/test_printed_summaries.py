"""The figures `optimize`, `compare` and `run` print say what they mean: what the plan saves
overall (acquisition and evaluation), nothing about sharing when nothing is shared, rows per
event read, and rows of undeclared types as not used rather than rejected."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cepplan.engine_adapter.metrics_table import metrics_lines, run_warnings
from cepplan.stats.rejected_rows import check_rejected
from cepplan.workload import load_workload
from tests.hostile import conftest as hostile

cli = hostile.cli  # the fixture: the real `cepplan` entry point, in-process
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_nothing_shared_is_said_in_words(tmp_path, cli):
    workload = {
        "format": "cepplan.workload/1", "name": "apart", "time_unit": "s",
        "event_types": {t: {"attributes": {"x": "double"}} for t in "ABCD"},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "within": 2},
                     {"name": "q", "structure": ["SEQ", "c:C", "d:D"], "within": 2}],
        "statistics": {"rates": dict.fromkeys("ABCD", 1.0)}}
    (tmp_path / "w.json").write_text(json.dumps(workload))
    done = cli("optimize", tmp_path / "w.json", "-o", tmp_path / "p.json")
    assert done.code == 0, done.err
    line = next(t for t in done.out.splitlines() if t.startswith("evaluation plan:"))
    assert line.startswith("evaluation plan: no subtree is shared;"), line
    assert "0 subtree(s)" not in line and "0 pattern(s)" not in line
    assert "1.0x" not in line  # two-event patterns: no order is cheaper than their own


def test_compare_speaks_of_acquisition_and_evaluation(tmp_path, cli):
    """Trading rules: no multi-step plan sends fewer events, but sharing and reordering
    build far fewer partial matches than the trivial plan."""
    done = cli("compare", EXAMPLES / "trading_rules" / "workload.json", "-o",
               tmp_path / "report.html", "--time-limit", "2")
    assert done.code == 0, done.err
    assert "best plan: trivial" not in done.out
    report = json.loads((tmp_path / "report.json").read_text())
    trivial = report["planners"][0]["total_cost"]
    assert f"acquisition: {trivial:.4g} events/s, as for the trivial plan" in done.out
    evaluation = report["evaluation"]["planners"]
    base = evaluation[0]["cost"]
    best = min(evaluation, key=lambda p: p["cost"])
    found = re.search(r"evaluation: best plan (\w+), ([\d.]+) expected partial matches per "
                      r"window against ([\d.]+) for the trivial plan \(([\d.]+)x fewer\)",
                      done.out)
    assert found, done.out
    assert found.group(1) == best["name"]
    assert float(found.group(4)) == round(base / best["cost"], 1) >= 1.5


def test_rows_of_undeclared_types_are_not_used_and_copies_are_explained():
    metrics = {"engine": "local", "rows_read": 110,
               "rows_rejected": {"unknown type": 6, "malformed row": 4},
               "rows_to_matchers": 250, "rows_to_matchers_by_pattern": {"p": 150, "q": 100},
               "matches": {"p": 1, "q": 0}, "seconds": {}}
    text = "\n".join(metrics_lines(metrics))
    assert re.search(r"rows not used\s+6\s+\(of types the workload does not declare\)", text)
    assert re.search(r"rows rejected\s+4\n\s+malformed row\s+4\n", text)
    assert "unknown type" not in text
    # 110 read, 4 rejected, 6 not used: 100 events, 250 rows to the two patterns' matchers
    assert "250   2.500 per event read (a copy per matcher that reads it)" in text
    assert run_warnings(metrics, 16) == []  # rejected rows: check_rejected, below
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    assert check_rejected("ev.csv", 110, metrics["rows_rejected"], [], workload) == (
        "warning: ev.csv: 4 of 110 rows rejected (malformed row: 4)")
    assert check_rejected("ev.csv", 110, {"unknown type": 6}, [], workload) is None


def test_stats_counts_rows_of_undeclared_types_as_not_used(tmp_path, cli):
    lines = (EXAMPLES / "fraud" / "events.csv").read_text().splitlines()
    last = lines[-1].split(",", 1)[1]
    events = tmp_path / "events.csv"
    events.write_text("\n".join([*lines, "Mystery," + last, "Login,not-a-time,k0,s0,s3,,"])
                      + "\n")
    done = cli("stats", events, "-w", EXAMPLES / "fraud" / "workload.json", "-o",
               tmp_path / "stats.json", "--engine", "local")
    assert done.code == 0, done.err
    assert "1 rejected, 1 not used (types the workload does not declare:" in \
        " ".join(done.out.split())
    warnings = [line for line in done.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, done.err
    assert warnings[0].startswith(f"warning: {events}: 1 of {len(lines) + 1:,} rows rejected "
                                  "(missing or unparsable time: 1)"), done.err


def test_a_greedy_covering_fallback_is_a_warning():
    metrics = {"rows_read": 0, "covering": {"solver": {"fallbacks": 2}}}
    assert run_warnings(metrics, 16) == [
        "warning: 2 batch(es) of consumer queries used the greedy cover: CP-SAT found none "
        "within the plan's covering time limit, so operators may run more often than needed "
        "(optimize --covering-time-limit)"]


def test_more_rows_to_matchers_than_events_is_explained():
    metrics = {"engine": "local", "rows_read": 100, "rows_rejected": {},
               "rows_to_matchers": 547, "rows_to_matchers_by_pattern": {"p": 547},
               "matches": {"p": 1}, "seconds": {},
               "contexts": {"windows": {}, "patterns": {}}}
    text = "\n".join(metrics_lines(metrics))
    assert "547   5.470 per event read" in text
    assert ("more rows than events: several matchers read the same events, and context "
            "derivation reads again the events where its steps overlap") in text
    del metrics["contexts"]
    metrics["rows_to_matchers"] = 50
    assert "more rows than events" not in "\n".join(metrics_lines(metrics))
