"""`report.html`: one self-contained page (inline CSS, inline SVG plots, a few lines of inline
JavaScript to sort tables) that opens with no network, on a laptop screen and in print."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
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

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;margin:0 auto;
max-width:1100px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid
#d0d7de;padding-bottom:4px}.lead{color:#57606a;margin:0 0 16px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #d8dee4;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;user-select:none;min-width:4em}
.wide{overflow-x:auto;max-width:100%}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right}.best{font-weight:600;color:#1f6feb}
.grid{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}.grid figure{margin:0}
figure svg{max-width:100%;height:auto}.note{color:#57606a;font-size:13px}
figcaption{width:0;min-width:100%;font-size:12px;color:#57606a;border-left:3px solid #cf222e;
padding-left:6px;box-sizing:border-box}
.headline{font-size:15px;font-weight:600;margin:8px 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:0 0 10px}
.card{flex:1 1 200px;border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;
background:#f6f8fa}.card .what{font-size:12px;color:#57606a}
.card .figure{font-size:22px;font-weight:600;color:#1f6feb;line-height:1.3}
.card p{margin:2px 0 0;font-size:13px}.card.bad .figure{color:#cf222e}
.card.none .figure{color:#57606a}
.plan{text-align:left;white-space:nowrap}.plan .figures{color:#57606a;font-size:12px}
.plan.best{color:inherit;font-weight:400;background:#ddf4ff;border-radius:4px;margin:-2px -4px;
padding:2px 4px}.plan.best .figures{color:#0969da;font-weight:600}
details{margin:8px 0}summary{cursor:pointer;color:#0969da}
code{font-size:12px;overflow-wrap:anywhere}
.bad{color:#cf222e;font-weight:600}
@media print{body{max-width:none;padding:0}th{cursor:auto}.wide{overflow:visible}
h2{break-after:avoid}figure,table{break-inside:avoid}}
"""

_SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function(table){
  table.querySelectorAll("th").forEach(function(th, col){
    th.addEventListener("click", function(){
      var asc = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function(h){h.removeAttribute("aria-sort");});
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function(a, b){
        var x = a.cells[col].dataset.v || a.cells[col].textContent;
        var y = b.cells[col].dataset.v || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
"""


def render_html(report: Mapping[str, Any]) -> str:
    """The whole page for one `report.json` document."""
    workload = report["workload"]
    name = workload["name"] or workload["path"]
    body = "\n".join([
        f"<h1>Plans for {escape(name)}</h1>",
        f"<p class='lead'>{len(workload['patterns'])} patterns, statistics: "
        f"{escape(str(report['statistics']))}, costs in {escape(report['unit'])} (expected "
        "events sent to the matchers). Click a column header to sort a table; "
        "click a &#9656; line to open what it holds.</p>",
        _blocks(report_blocks(report))])
    title = escape(f"cepplan plans: {name}")
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<title>{title}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
            f"<p class='note'>cepplan {escape(report['cepplan'])}</p>\n"
            f"<script>{_SORT_JS}</script></body></html>\n")


def _blocks(blocks: Sequence[Block]) -> str:
    """Blocks as HTML, consecutive plots side by side."""
    parts: list[str] = []
    row: list[str] = []
    for block in blocks:
        if isinstance(block, Figure):
            row.append(_figure(block))
            continue
        if row:
            parts.append(f"<div class='grid'>{''.join(row)}</div>")
            row = []
        parts.append(_block(block))
    if row:
        parts.append(f"<div class='grid'>{''.join(row)}</div>")
    return "\n".join(parts)


def _block(block: Block) -> str:
    """One renderer-neutral block (not a plot) as HTML."""
    if isinstance(block, Section):
        return (f"<section id='{escape(block.anchor)}'><h2>{escape(block.title)}</h2>\n"
                f"{_blocks(block.blocks)}</section>")
    if isinstance(block, Details):
        return (f"<details{' open' if block.open else ''}><summary>{escape(block.summary)}"
                f"</summary>\n{_blocks(block.blocks)}</details>")
    if isinstance(block, Note):
        kind = "bad" if block.bad else "headline" if block.strong else "note"
        return f"<p class='{kind}'>{_inline_code(block.text)}</p>"
    if isinstance(block, Cards):
        return "<div class='cards'>" + "".join(
            f"<div class='card {c.tone}'><div class='what'>{escape(c.title)}"
            f"</div><div class='figure'>{escape(c.figure)}</div><p>{_inline_code(c.text)}</p>"
            "</div>" for c in block.cards) + "</div>"
    assert isinstance(block, Table)
    return _table(block.header, [[_html_cell(c) for c in row] for row in block.rows])


def _html_cell(cell: Cell) -> str | tuple[str, float]:
    return format_cell(cell, {
        str: escape, Num: lambda c: _num(c.value, c.suffix), Percent: lambda c: _percent(c.value),
        Code: lambda c: f"<code>{escape(c.text)}</code>",
        Marked: lambda c: f"<span class='best'>{escape(c.cell)}</span>",
        PlanChoice: _plan_choice})


def _plan_choice(cell: PlanChoice) -> str | tuple[str, float]:
    """The plan, then its cost and latency; the cheapest of its row marked."""
    cost = "–" if cell.cost is None else escape(number(cell.cost))
    text = (f"<code>{escape(cell.plan)}</code><br><span class='figures'>{cost} · "
            f"{cell.latency} step{'s' if cell.latency != 1 else ''}</span>")
    text = (f"<div class='plan best' title='the cheapest plan of the pattern'>&#10003; {text}"
            "</div>" if cell.best else f"<div class='plan'>{text}</div>")
    return text if cell.cost is None else (text, float(cell.cost))


def _inline_code(text: str) -> str:
    """Escaped text with `backquoted` parts as code."""
    parts = escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _table(header: Sequence[str], rows: Sequence[Sequence[str | tuple[str, float]]]) -> str:
    head = "".join(f"<th scope='col'>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    return (f"<div class='wide'><table class='sortable'><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _cell(cell: str | tuple[str, float]) -> str:
    if isinstance(cell, tuple):
        text, value = cell
        return f"<td class='num' data-v='{value!r}'>{text}</td>"
    return f"<td>{cell}</td>"


def _num(value: float | int | None, suffix: str = "") -> str | tuple[str, float]:
    if value is None:
        return "–"
    return (escape(number(value, suffix)), float(value))


def _percent(value: float | None) -> str | tuple[str, float]:
    return "–" if value is None else (f"{value:.1f}%", value)


def _figure(figure: Figure) -> str:
    caption = (f"<figcaption>{_inline_code(figure.caption)}</figcaption>" if figure.caption
               else "")
    return f"<figure>{figure.draw()}{caption}</figure>"
