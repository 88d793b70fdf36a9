"""`report.md`: the report as Markdown tables, for pull requests and terminals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cepplan.report.blocks import Block, Cell, Figure, Heading, Note, format_cell, variant_blocks
from cepplan.report.text import notation, number, saving


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
    for block in variant_blocks(report):
        lines += _block(block)
    return "\n".join(lines) + "\n"


def _block(block: Block) -> list[str]:
    """One renderer-neutral block as Markdown lines (plots are the page's)."""
    if isinstance(block, Heading):
        return ["", f"## {block.text}", ""]
    if isinstance(block, Note):
        return [f"**{block.text}**" if block.bad else block.text, ""]
    if isinstance(block, Figure):
        return []
    return [*_table(block.header, [[_md_cell(c) for c in row] for row in block.rows]), ""]


def _md_cell(cell: Cell) -> str:
    return format_cell(cell, _fmt, _percent, lambda text: f"`{text}`", str)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(r) for r in rows)]


def _fmt(value: float | int | None, suffix: str = "") -> str:
    return "–" if value is None else number(value, suffix)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}%"
