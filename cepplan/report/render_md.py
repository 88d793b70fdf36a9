"""`report.md`: the report as Markdown tables, for pull requests and terminals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cepplan.report.text import notation, saving, section_rows


def render_markdown(report: Mapping[str, Any]) -> str:
    """The planners side by side, each pattern's plans, and the passes' sections."""
    workload = report["workload"]
    planners = report["planners"]
    trivial = next(p["total_cost"] for p in planners if p["name"] == "trivial")
    lines = [f"# Plans for {workload['name'] or workload['path']}", "",
             f"{len(workload['patterns'])} patterns; statistics: {report['statistics']}; "
             f"modelled costs in {report['unit']}. Best: **{report['best']}**.", "",
             "Plan notation: `a,b -> c` watches a and b continuously and fetches c only "
             "within the window after they match; latency counts those steps.", "",
             "## Planners", ""]
    lines += _table(["planner", "what it does", "modelled cost", "saving vs trivial",
                     "planning time"],
                    [[p["name"], p["description"], _fmt(p["total_cost"]),
                      _percent(saving(p["total_cost"], trivial)), _fmt(p["seconds"], " s")]
                     for p in planners])
    lines += ["", "## Chosen plan per pattern", ""]
    rows = [[name, p["name"], f"`{notation(p['patterns'][name]['steps'])}`",
             _fmt(p["patterns"][name]["latency"]), _fmt(p["patterns"][name]["cost"])]
            for name in workload["patterns"] for p in planners if name in p["patterns"]]
    lines += _table(["pattern", "planner", "plan", "latency", "modelled cost"], rows)
    evaluation = report.get("evaluation")
    if evaluation:
        base = next(p["cost"] for p in evaluation["planners"] if p["name"] == "trivial")
        lines += ["", "## Evaluation trees: sharing between patterns", "",
                  f"Modelled costs in {evaluation['unit']}.", ""]
        lines += _table(["planner", "what it does", "modelled cost", "saving vs trivial",
                         "search steps", "search time"],
                        [[p["name"], p["description"], _fmt(p["cost"]),
                          _percent(saving(p["cost"], base)), _fmt(p.get("steps")),
                          _fmt(p.get("seconds"), " s")] for p in evaluation["planners"]])
    for key, section in report.get("sections", {}).items():
        lines += ["", f"## {key.capitalize()}", ""]
        lines += _table(["what", "value"], [[k, v] for k, v in section_rows(section)])
    measured = report.get("measured")
    if measured:
        lines += ["", "## Measured on the events", "",
                  "Every plan found the same matches." if measured["matches_equal"] else
                  "**The plans found different matches: this is a bug, please report it.**", ""]
        lines += _table(["planner", "rows to matchers", "measured factor", "predicted factor",
                         "matches", "wall time"],
                        [[r["planner"], _fmt(r["rows_to_matchers"]),
                          _fmt(r["measured_factor"]), _fmt(r.get("predicted_factor")),
                          _fmt(r["matches"]), _fmt(r["seconds"], " s")]
                         for r in measured["runs"]])
    return "\n".join(lines) + "\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(r) for r in rows)]


def _fmt(value: float | int | None, suffix: str = "") -> str:
    return "–" if value is None else f"{value:.4g}{suffix}"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}%"
