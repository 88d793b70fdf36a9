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

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
                     "axes.spines.right": False, "figure.dpi": 96})

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
    return _svg(fig, f"Pareto front of {pattern}")


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


def predicted_vs_measured(points: Sequence[tuple[str, float, float]], what: str) -> str:
    """Predicted against measured figures, one point per planner, with the y = x line."""
    fig, ax = plt.subplots(figsize=(3.8, 3.4))
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    ax.scatter(xs, ys, color=ACCENT, zorder=3)
    for name, x, y in points:
        ax.annotate(name, (x, y), xytext=(4, 4), textcoords="offset points")
    top = max([*xs, *ys, 1e-9]) * 1.1
    ax.plot([0, top], [0, top], color=MUTED, lw=1, ls="--")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(f"predicted {what}")
    ax.set_ylabel(f"measured {what}")
    return _svg(fig, f"Predicted against measured {what}")


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


def _svg(fig: Any, title: str) -> str:
    """The figure as an `<svg>` element with an accessible title, the figure closed."""
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buffer.getvalue()
    svg = text[text.index("<svg"):]
    head_end = svg.index(">") + 1
    return (svg[:head_end].replace("<svg", f'<svg role="img" aria-label="{html.escape(title)}"', 1)
            + svg[head_end:])
