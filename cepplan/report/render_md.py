"""`report.md`: the report as Markdown tables, for pull requests and terminals."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from cepplan.report.blocks import Block, Cell, Figure, Heading, Note, format_cell, variant_blocks
from cepplan.report.text import notation, number, saving
from cepplan.terminal import printable


def render_markdown(report: Mapping[str, Any]) -> str:
    """The planners side by side, each pattern's plans, and the passes' sections."""
    workload = report["workload"]
    planners = report["planners"]
    trivial = next(p["total_cost"] for p in planners if p["name"] == "trivial")
    lines = [f"# Plans for {md_text(workload['name'] or workload['path'])}", "",
             f"{len(workload['patterns'])} patterns; statistics: "
             f"{md_text(str(report['statistics']))}; modelled costs in "
             f"{md_text(report['unit'])}. Best: **{md_text(report['best'])}**.", "",
             "Plan notation: `a,b -> c` watches a and b continuously and fetches c only "
             "within the window after they match; latency counts those steps.", "",
             "## Planners", ""]
    lines += _table(["planner", "what it does", "modelled cost", "saving vs trivial",
                     "planning time"],
                    [[md_text(p["name"]), md_text(p["description"]), _fmt(p["total_cost"]),
                      _percent(saving(p["total_cost"], trivial)), _fmt(p["seconds"], " s")]
                     for p in planners])
    lines += ["", "## Chosen plan per pattern", ""]
    rows = [[md_text(name), md_text(p["name"]), md_code(notation(p["patterns"][name]["steps"])),
             _fmt(p["patterns"][name]["latency"]), _fmt(p["patterns"][name]["cost"])]
            for name in workload["patterns"] for p in planners if name in p["patterns"]]
    lines += _table(["pattern", "planner", "plan", "latency", "modelled cost"], rows)
    evaluation = report.get("evaluation")
    if evaluation:
        base = next(p["cost"] for p in evaluation["planners"] if p["name"] == "trivial")
        lines += ["", "## Evaluation trees: sharing between patterns", "",
                  f"Modelled costs in {md_text(evaluation['unit'])}.", ""]
        lines += _table(["planner", "what it does", "modelled cost", "saving vs trivial",
                         "search steps", "search time"],
                        [[md_text(p["name"]), md_text(p["description"]), _fmt(p["cost"]),
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
    return format_cell(cell, _fmt, _percent, md_code, md_text)


def md_text(text: str) -> str:
    """User text (names, descriptions) as Markdown that renders as exactly that text: control
    characters visible, `<`, `>` and `&` as entities (no raw HTML), and the characters that
    start links, images, code and emphasis backslash-escaped (an underscore inside a word,
    which cannot start emphasis, stays as it is)."""
    return _MARKUP.sub(_escape_markup, printable(text, lines=False))


def md_code(text: str) -> str:
    """Text as a Markdown code span (shown literally, HTML included), its fence longer than any
    run of backquotes inside it."""
    text = printable(text, lines=False)
    fence = "`" * (1 + max(map(len, re.findall("`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_MARKUP = re.compile(r"[&<>\\`*\[\]~]|(?<![^\W_])_|_(?![^\W_])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _escape_markup(found: re.Match[str]) -> str:
    char = found.group()
    return _ENTITIES.get(char, "\\" + char)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A table of Markdown cells (user text already escaped); a `|` inside a cell escaped."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(r) for r in rows)]


def _fmt(value: float | int | None, suffix: str = "") -> str:
    return "–" if value is None else number(value, suffix)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}%"
