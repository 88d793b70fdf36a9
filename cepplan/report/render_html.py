"""`report.html`: one self-contained page (inline CSS, inline SVG plots, a few lines of inline
JavaScript to sort tables) that opens with no network, on a laptop screen and in print."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from cepplan.report import plots
from cepplan.report.blocks import (
    Block,
    Cell,
    Figure,
    Heading,
    Note,
    Table,
    format_cell,
    variant_blocks,
)
from cepplan.report.text import notation, number, saving

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
.grid{display:flex;flex-wrap:wrap;gap:12px}.grid figure{margin:0}
figure svg{max-width:100%;height:auto}.note{color:#57606a;font-size:13px}
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
    unit = report["unit"]
    planners = report["planners"]
    parts = [
        f"<h1>Plans for {escape(workload['name'] or workload['path'])}</h1>",
        f"<p class='lead'>{len(workload['patterns'])} patterns, statistics: "
        f"{escape(str(report['statistics']))}, costs in {escape(unit)} (expected events sent "
        f"to the matchers). Plan notation: <code>a,b -&gt; c</code> watches a and b "
        f"continuously and fetches c only within the window after they match; latency counts "
        f"those steps. Click a column header to sort.</p>",
        "<h2>Planners side by side</h2>",
        _figure(plots.cost_bars(planners, unit)),
        _planner_table(planners, report["best"]),
        "<h2>Chosen plan per pattern</h2>",
        _pattern_table(planners, workload["patterns"]),
        *_pareto(report["pareto"], unit),
    ]
    if report.get("evaluation"):
        parts += _evaluation(report["evaluation"])
    parts += [_block(b) for b in variant_blocks(report)]
    body = "\n".join(parts)
    title = escape(f"cepplan plans: {workload['name'] or workload['path']}")
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<title>{title}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
            f"<p class='note'>cepplan {escape(report['cepplan'])}</p>\n"
            f"<script>{_SORT_JS}</script></body></html>\n")


def _pareto(fronts: Mapping[str, Sequence[Mapping[str, Any]]], unit: str) -> list[str]:
    """A plot per pattern with a trade-off between cost and latency; the patterns with one
    best plan whatever the latency are named, not drawn."""
    traded = {name: front for name, front in fronts.items() if len(front) > 1}
    single = [name for name, front in fronts.items() if len(front) == 1]
    parts = ["<h2>Pareto fronts: cost against latency</h2>",
             "<p class='note'>Each point is a plan no other plan beats on both cost and "
             "latency; the highlighted one is the cheapest within the pattern's latency "
             "bound.</p>"]
    if traded:
        parts.append("<div class='grid'>" + "".join(
            _figure(plots.pareto_front(name, front, unit)) for name, front in traded.items())
            + "</div>")
    if single:
        parts.append(f"<p class='note'>One plan is the cheapest at every latency (no "
                     f"trade-off to draw) for: {escape(', '.join(single))}.</p>")
    return parts


def _planner_table(planners: Sequence[Mapping[str, Any]], best: str) -> str:
    trivial = next(p["total_cost"] for p in planners if p["name"] == "trivial")
    rows = []
    for p in planners:
        cls = " class='best'" if p["name"] == best else ""
        rows.append([f"<span{cls}>{escape(p['name'])}</span>", escape(p["description"]),
                     _num(p["total_cost"]), _percent(saving(p["total_cost"], trivial)),
                     _num(p["seconds"], " s")])
    return _table(["planner", "what it does", "modelled cost", "saving vs trivial",
                   "planning time"], rows)


def _pattern_table(planners: Sequence[Mapping[str, Any]], patterns: Sequence[str]) -> str:
    rows = []
    for name in patterns:
        for p in planners:
            entry = p["patterns"].get(name)
            if entry is None:
                continue
            rows.append([escape(name), escape(p["name"]), escape(notation(entry["steps"])),
                         _num(entry["latency"]), _num(entry["cost"])])
    return _table(["pattern", "planner", "plan", "latency", "modelled cost"], rows)


def _evaluation(evaluation: Mapping[str, Any]) -> list[str]:
    """The evaluation searches beside their baselines, and their cost over time."""
    unit = evaluation["unit"]
    trivial = next(p["cost"] for p in evaluation["planners"] if p["name"] == "trivial")
    rows = [[escape(p["name"]), escape(p["description"]), _num(p["cost"]),
             _percent(saving(p["cost"], trivial)), _num(p.get("steps")),
             _num(p.get("seconds"), " s")] for p in evaluation["planners"]]
    return ["<h2>Evaluation trees: sharing between patterns</h2>",
            f"<p class='note'>Costs in {escape(unit)}: how many partial matches the matcher "
            "builds, lower is faster. SH shares the largest common parts in fixed orders; RE "
            "reorders each pattern alone; the searches do both.</p>",
            _figure(plots.convergence(evaluation["traces"], unit)),
            _table(["planner", "what it does", "modelled cost", "saving vs trivial",
                    "search steps", "search time"], rows)]


def _block(block: Block) -> str:
    """One renderer-neutral block as HTML."""
    if isinstance(block, Heading):
        return f"<h2>{escape(block.text)}</h2>"
    if isinstance(block, Note):
        return f"<p class='{'bad' if block.bad else 'note'}'>{_inline_code(block.text)}</p>"
    if isinstance(block, Figure):
        return _figure(block.draw())
    assert isinstance(block, Table)
    return _table(block.header, [[_html_cell(c) for c in row] for row in block.rows])


def _html_cell(cell: Cell) -> str | tuple[str, float]:
    return format_cell(cell, _num, _percent, lambda text: f"<code>{escape(text)}</code>",
                       escape)


def _inline_code(text: str) -> str:
    """Escaped text with `backquoted` parts as code."""
    parts = escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
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


def _figure(svg: str) -> str:
    return f"<figure>{svg}</figure>"
