"""`report.md`: the report as Markdown — the same summary and tables as the page — for pull
requests and terminals."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from cepplan.report.blocks import (
    Block,
    Cards,
    Cell,
    Code,
    Details,
    Figure,
    Marked,
    Note,
    Num,
    Percent,
    PlanChoice,
    Section,
    Table,
    format_cell,
)
from cepplan.report.sections import report_blocks
from cepplan.report.text import number
from cepplan.terminal import printable


def render_markdown(report: Mapping[str, Any]) -> str:
    """The summary, the planners side by side, each pattern's plans, and the passes'
    sections, as the page has them (its plots aside)."""
    workload = report["workload"]
    lines = [f"# Plans for {md_text(workload['name'] or workload['path'])}", "",
             f"{len(workload['patterns'])} patterns; statistics: "
             f"{md_text(str(report['statistics']))}; modelled costs in "
             f"{md_text(report['unit'])}. Best: **{md_text(report['best'])}**.", ""]
    for block in report_blocks(report):
        lines += _block(block)
    return "\n".join(lines).rstrip("\n") + "\n"


def _block(block: Block) -> list[str]:
    """One renderer-neutral block as Markdown lines (plots are the page's; their captions
    are kept)."""
    if isinstance(block, Section):
        return ["", f"## {md_text(block.title)}", "",
                *(line for b in block.blocks for line in _block(b))]
    if isinstance(block, Details):
        return [f"**{md_text(block.summary)}**", "",
                *(line for b in block.blocks for line in _block(b))]
    if isinstance(block, Note):
        text = _md_inline(block.text)
        return [f"**{text}**" if block.bad or block.strong else text, ""]
    if isinstance(block, Figure):
        return [_md_inline(block.caption), ""] if block.caption else []
    if isinstance(block, Cards):
        return [*_table(["", "saving", "how"], [[f"**{md_text(c.title)}**", md_text(c.figure),
                                                  _md_inline(c.text)] for c in block.cards]),
                ""]
    assert isinstance(block, Table)
    return [*_table(block.header, [[_md_cell(c) for c in row] for row in block.rows]), ""]


def _md_cell(cell: Cell) -> str:
    return format_cell(cell, {
        str: md_text, Num: lambda c: _fmt(c.value, c.suffix),
        Percent: lambda c: _percent(c.value), Code: lambda c: md_code(c.text),
        Marked: lambda c: f"**{md_text(c.cell)}**", PlanChoice: _plan_choice})


def _plan_choice(cell: PlanChoice) -> str:
    """`plan` cost (latency), the cheapest of its row in bold with a check mark."""
    figures = f"{_fmt(cell.cost)} ({cell.latency} step{'s' if cell.latency != 1 else ''})"
    return (f"{md_code(cell.plan)} **{figures} ✓**" if cell.best
            else f"{md_code(cell.plan)} {figures}")


def _md_inline(text: str) -> str:
    """Text with `backquoted` parts as code spans, the rest as plain text."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backquote: all of it is text
        return md_text(text)
    return "".join(md_code(p) if i % 2 else md_text(p) for i, p in enumerate(parts))


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
