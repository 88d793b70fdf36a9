"""The report's plots as inline SVG text (matplotlib, Agg): no network, no JavaScript, crisp on a
laptop screen and in print. Each function takes report data and returns one `<svg>` element."""

from __future__ import annotations

import html
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

# labels carry users' names (contexts, operators, patterns): drawn as written, never read as
# mathtext (`$\\undefinedmacro$` raised a ValueError) or LaTeX
plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
                     "axes.spines.right": False, "figure.dpi": 96, "text.parse_math": False,
                     "text.usetex": False})

ACCENT, MUTED = "#1f6feb", "#8c959f"


def cost_bars(planners: Sequence[Mapping[str, Any]], unit: str) -> str:
    """Each planner's modelled workload cost on a log scale, cheapest highlighted."""
    names = [p["name"] for p in planners]
    costs = [max(float(p["total_cost"]), 1e-12) for p in planners]
    best = min(costs)
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(names) + 0.9))
    low, high = _decades(costs)
    ax.barh(names, [c - low for c in costs], left=low,
            color=[ACCENT if c == best else MUTED for c in costs])
    _log_scale(ax.xaxis, ax.set_xscale, ax.set_xlim, low, high)
    ax.invert_yaxis()
    ax.set_xlabel(f"modelled cost ({unit}, log scale)")
    for y, cost in enumerate(costs):
        ax.annotate(f"{cost:.4g}", (cost, y), xytext=(3, 0), textcoords="offset points",
                    va="center")
    return _svg(fig, "Modelled cost per planner")


def pareto_front(pattern: str, front: Sequence[Mapping[str, Any]], unit: str) -> str:
    """One pattern's Pareto front: cost against latency, the chosen plan marked."""
    fig, ax = plt.subplots(figsize=(3.6, 2.6))
    points = sorted((int(p["latency"]), float(p["cost"] or 0.0), bool(p["chosen"]))
                    for p in front)
    ax.step([p[0] for p in points], [p[1] for p in points], where="post", color=MUTED, lw=1)
    ax.scatter([p[0] for p in points], [p[1] for p in points], color=MUTED, zorder=2)
    chosen = [p for p in points if p[2]]
    ax.scatter([p[0] for p in chosen], [p[1] for p in chosen], color=ACCENT, s=60, zorder=3,
               label="chosen")
    if all(p[1] > 0 for p in points):
        _log_scale(ax.yaxis, ax.set_yscale, ax.set_ylim, *_decades([p[1] for p in points]))
    ax.set_xticks(sorted({p[0] for p in points}))
    ax.set_xlabel("latency (plan steps)")
    ax.set_ylabel(f"cost ({unit})")
    ax.set_title(pattern, fontsize=9)
    # fixed margins instead of a tight layout: a workload has one front per pattern, and
    # laying out each costs twice its drawing (50 patterns: seconds)
    fig.subplots_adjust(left=0.21, right=0.96, bottom=0.18, top=0.9)
    return _svg(fig, f"Pareto front of {pattern}", tight=False)


def convergence(traces: Mapping[str, Sequence[Sequence[float]]], unit: str) -> str:
    """The best cost each search found over time, one line per search."""
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    for name, trace in traces.items():
        ax.step([t[0] for t in trace], [t[1] for t in trace], where="post", label=name)
    costs = [t[1] for trace in traces.values() for t in trace if t[1] > 0]
    if costs:
        _log_scale(ax.yaxis, ax.set_yscale, ax.set_ylim, *_decades(costs))
    ax.set_xlabel("seconds")
    ax.set_ylabel(f"best cost ({unit})")
    ax.legend(frameon=False)
    return _svg(fig, "Search cost over time")


def predicted_vs_measured(points: Sequence[tuple[str, float, float]], what: str,
                          log: bool = False) -> str:
    """Predicted against measured figures, one point per planner, with the y = x line; on
    log axes (`log`) when the figures span decades."""
    fig, ax = plt.subplots(figsize=(3.8, 3.4))
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    ax.scatter(xs, ys, color=ACCENT, zorder=3)
    for name, x, y in _merged_labels(points):
        ax.annotate(name, (x, y), xytext=(4, 4), textcoords="offset points")
    if log and all(v > 0 for v in [*xs, *ys]):
        low, high = _decades([*xs, *ys])
        _log_scale(ax.xaxis, ax.set_xscale, ax.set_xlim, low, high)
        _log_scale(ax.yaxis, ax.set_yscale, ax.set_ylim, low, high)
        ax.plot([low, high], [low, high], color=MUTED, lw=1, ls="--")
    else:
        top = max([*xs, *ys, 1e-9]) * 1.1
        ax.plot([0, top], [0, top], color=MUTED, lw=1, ls="--")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
    ax.set_xlabel(f"predicted {what}")
    ax.set_ylabel(f"measured {what}")
    return _svg(fig, f"Predicted against measured {what}")


def _merged_labels(points: Sequence[tuple[str, float, float]]
                   ) -> list[tuple[str, float, float]]:
    """One label per cluster of points within 3% of each other on both axes (planners that
    chose the same plan would otherwise write their names over each other)."""
    merged: list[tuple[str, float, float]] = []
    for name, x, y in sorted(points, key=lambda p: (p[1], p[2])):
        near = next((i for i, (_, mx, my) in enumerate(merged)
                     if abs(mx - x) <= 0.03 * max(abs(mx), abs(x), 1e-12)
                     and abs(my - y) <= 0.03 * max(abs(my), abs(y), 1e-12)), None)
        if near is None:
            merged.append((name, x, y))
        else:
            label, mx, my = merged[near]
            merged[near] = (f"{label}, {name}", mx, my)
    return merged


def membership(rows: Sequence[str], columns: Sequence[str],
               cells: Mapping[tuple[int, int], float], title: str, row_label: str,
               column_label: str) -> str:
    """A matrix of filled squares: row i × column j is filled when (i, j) is in `cells`,
    darker for larger values (which node each pattern uses, which patterns each grouped
    window runs), so a reader sees at a glance who shares what."""
    width = min(10.4, 1.6 + 0.19 * len(columns) + 0.06 * max(map(len, rows), default=0))
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.24 * len(rows)
                                    + 0.065 * max(map(len, columns), default=0)))
    top = max(cells.values(), default=1.0) or 1.0
    for (i, j), value in cells.items():
        shade = 0.35 + 0.65 * (value / top)
        ax.add_patch(plt.Rectangle((j - 0.42, i - 0.42), 0.84, 0.84, color=ACCENT,
                                   alpha=shade, lw=0))
    ax.set_xlim(-0.6, len(columns) - 0.4)
    ax.set_ylim(len(rows) - 0.4, -0.6)
    ax.set_xticks(range(len(columns)), columns, rotation=90)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xticks([x + 0.5 for x in range(len(columns) - 1)], minor=True)
    ax.set_yticks([y + 0.5 for y in range(len(rows) - 1)], minor=True)
    ax.grid(which="minor", color="#d8dee4", lw=0.5)
    ax.tick_params(which="both", length=0)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(column_label)
    ax.set_ylabel(row_label)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    return _svg(fig, title)


def paired_bars(names: Sequence[str], pairs: Sequence[tuple[float, float]],
                labels: tuple[str, str], notes: Sequence[str], unit: str, title: str) -> str:
    """Two bars per name (without and with an optimisation), each pair annotated."""
    fig, ax = plt.subplots(figsize=(6.4, 0.62 * len(names) + 1.0))
    ys = range(len(names))
    ax.barh([y - 0.18 for y in ys], [p[0] for p in pairs], height=0.34, color=MUTED,
            label=labels[0])
    ax.barh([y + 0.18 for y in ys], [p[1] for p in pairs], height=0.34, color=ACCENT,
            label=labels[1])
    for y, (before, after), note in zip(ys, pairs, notes, strict=True):
        ax.annotate(note, (max(before, after), y), xytext=(4, 0), textcoords="offset points",
                    va="center")
    ax.set_yticks(list(ys), names)
    ax.invert_yaxis()
    ax.set_xlim(0, max([max(p) for p in pairs] + [1e-9]) * 1.45)
    ax.set_xlabel(unit)
    ax.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
    return _svg(fig, title)


def thresholds_scatter(points: Sequence[tuple[float, float, bool]],
                       thresholds: Sequence[tuple[float, float]]) -> str:
    """Neighbour pairs by expected precision and recall of the reused result, against the
    served queries' thresholds: a pair may share one operator execution only above both."""
    fig, ax = plt.subplots(figsize=(3.8, 3.4))
    for meets, colour, label in ((True, ACCENT, "meets thresholds"),
                                 (False, MUTED, "below thresholds")):
        chosen = [p for p in points if p[2] == meets]
        ax.scatter([p[0] for p in chosen], [p[1] for p in chosen], color=colour, s=14,
                   alpha=0.7, label=f"{label} ({len(chosen)})", zorder=3)
    for precision, recall in sorted(set(thresholds)):
        ax.axvline(precision, color="#cf222e", lw=0.8, ls="--")
        ax.axhline(recall, color="#cf222e", lw=0.8, ls="--")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("expected precision")
    ax.set_ylabel("expected recall")
    ax.legend(frameon=False, loc="upper left", fontsize=8)
    return _svg(fig, "Neighbour pairs against quality thresholds")


def _decades(values: Sequence[float]) -> tuple[float, float]:
    """Axis limits for positive values on a log scale: from the decade below the smallest
    (or a third of it, when all values lie within one decade) to a little above the largest."""
    positive = [v for v in values if v > 0] or [1.0]
    low, high = min(positive), max(positive)
    floor = 10.0 ** math.floor(math.log10(low))
    return (floor if high / low >= 10 else low / 3, high * 1.4)


def _log_scale(axis: Any, set_scale: Any, set_limits: Any, low: float, high: float) -> None:
    """A log axis from `low` to `high`, ticks at 1, 2 and 5 of each decade, in plain numbers."""
    set_scale("log")
    set_limits(low, high)
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _svg(fig: Any, title: str, tight: bool = True) -> str:
    """The figure as an `<svg>` element with an accessible title, the figure closed; laid out
    tightly unless the caller fixed the margins."""
    buffer = io.StringIO()
    if tight:
        fig.tight_layout()
    fig.savefig(buffer, format="svg", bbox_inches="tight" if tight else None)
    plt.close(fig)
    text = buffer.getvalue()
    svg = text[text.index("<svg"):]
    head_end = svg.index(">") + 1
    return (svg[:head_end].replace("<svg", f'<svg role="img" aria-label="{html.escape(title)}"', 1)
            + svg[head_end:])
