"""The report's plots as inline SVG text (matplotlib, Agg): no network, no JavaScript, crisp on a
laptop screen and in print. Each function takes report data and returns one `<svg>` element."""

from __future__ import annotations

import html
import io
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from cepplan.report.text import notation, number

# labels carry users' names (contexts, operators, patterns): drawn as written, never read as
# mathtext (`$\\undefinedmacro$` raised a ValueError) or LaTeX
plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
                     "axes.spines.right": False, "figure.dpi": 96, "text.parse_math": False,
                     "text.usetex": False})

ACCENT, MUTED, RED = "#1f6feb", "#8c959f", "#cf222e"
COLOURS = (ACCENT, "#bf8700", "#8250df", "#1a7f37", "#cf222e", "#57606a")
FEW_POINTS = len(COLOURS)  # up to this many points each get a colour and a legend entry
LABELLED = 6  # otherwise only this many points are labelled, the farthest off
LABELLED_COUNTS = 30  # places of neighbour pairs up to which each count is written
PLAN_LABEL = 44  # characters of a plan label in a Pareto plot


def saving_bars(names: Sequence[str], costs: Sequence[float | None], baseline: float,
                unit: str, chosen: str, title: str) -> str:
    """Each alternative's saving against a baseline cost, in percent on a linear axis (costs
    spanning decades still read as the share they save), annotated with the cost itself; the
    one the summary speaks of highlighted."""
    savings = [0.0 if c is None or not baseline else 100.0 * (1 - c / baseline) for c in costs]
    fig, ax = plt.subplots(figsize=(6.4, 0.42 * len(names) + 1.1))
    colours = [ACCENT if n == chosen else MUTED for n in names]
    ax.barh(list(names), savings, color=colours)
    ax.set_xlim(min(0.0, *savings) * 1.1, 100.0)
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}%"))
    ax.set_xlabel(f"saving against the trivial plan ({number(baseline)}); in brackets: "
                  f"{unit}")
    for y, (saving, cost) in enumerate(zip(savings, costs, strict=True)):
        text = "not costed" if cost is None else f"{saving:.1f}% ({number(cost)})"
        ax.annotate(text, (max(saving, 0.0), y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.legend(handles=[Patch(color=ACCENT, label=chosen), Patch(color=MUTED, label="others")],
              frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
    return _svg(fig, title)


def pareto_front(pattern: str, front: Sequence[Mapping[str, Any]], unit: str,
                 cheapest_not_chosen: bool = False) -> str:
    """One pattern's Pareto front as a dot plot: a row per plan (by latency, fastest first),
    labelled with the plan, its cost as a dot, the chosen plan highlighted and, when it is not
    the cheapest, the cheapest ringed."""
    points = sorted((int(p["latency"]), float(p["cost"] or 0.0), bool(p["chosen"]),
                     _plan_label(p["latency"], p["steps"])) for p in front)
    labels = [p[3] for p in points]
    left = 0.15 + 0.068 * max(map(len, labels))  # inches for the row labels
    plot, right = 2.5, 0.55
    height = 0.3 * len(points) + 1.15
    fig, ax = plt.subplots(figsize=(left + plot + right, height))
    fig.subplots_adjust(left=left / (left + plot + right), right=1 - right / (left + plot + right),
                        bottom=0.8 / height, top=1 - 0.35 / height)
    ys = list(range(len(points)))
    costs = [p[1] for p in points]
    positive = all(c > 0 for c in costs)
    spread = positive and max(costs) / min(costs) >= 10
    start = _decades(costs)[0] if spread else 0.0
    ax.hlines(ys, start, costs, color="#d0d7de", lw=1)
    for chosen, colour, size, label in ((False, MUTED, 28, "other plans on the front"),
                                        (True, ACCENT, 64, "chosen")):
        rows = [y for y, p in zip(ys, points, strict=True) if p[2] == chosen]
        if rows:
            ax.scatter([costs[y] for y in rows], rows, color=colour, s=size, zorder=2 + chosen,
                       label=label)
    if cheapest_not_chosen:
        y = min(ys, key=lambda i: costs[i])
        ax.scatter([costs[y]], [y], facecolors="none", edgecolors=RED, s=150, lw=1.2, zorder=4,
                   label="cheapest (not chosen)")
    if spread:
        _log_scale(ax.xaxis, ax.set_xscale, ax.set_xlim, *_decades(costs))
    else:
        ax.set_xlim(0, max([*costs, 1e-9]) * 1.3)
    for y, cost in zip(ys, costs, strict=True):
        ax.annotate(number(cost), (cost, y), xytext=(9, 0), textcoords="offset points",
                    va="center", fontsize=7.5)
    ax.set_yticks(ys, labels)
    ax.set_ylim(len(points) - 0.5, -0.5)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel(f"modelled cost ({unit})")
    ax.set_title(pattern, fontsize=9, loc="left")
    fig.legend(*ax.get_legend_handles_labels(), frameon=False, loc="lower left",
               bbox_to_anchor=(0.0, 0.0), ncol=3, fontsize=7.5, handletextpad=0.2,
               columnspacing=0.8)
    return _svg(fig, f"Pareto front of {pattern}", tight=False)


def _plan_label(latency: int, steps: Sequence[Sequence[str]]) -> str:
    """`2 steps: r -> w -> l`, cut to `PLAN_LABEL` characters."""
    text = f"{latency} step{'s' if latency != 1 else ''}: {notation(steps)}"
    return text if len(text) <= PLAN_LABEL else text[:PLAN_LABEL - 1] + "…"


def convergence(traces: Mapping[str, Sequence[Sequence[float]]], unit: str) -> str:
    """The best cost each search found over time, one line per search, on an axis zoomed to
    the costs the searches went through (it does not start at zero)."""
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    for name, trace in traces.items():
        ax.step([t[0] for t in trace], [t[1] for t in trace], where="post", label=name)
    costs = [t[1] for trace in traces.values() for t in trace]
    if costs:
        low, high = min(costs), max(costs)
        pad = (high - low) * 0.1 or abs(high) * 0.05 or 1.0
        ax.set_ylim(low - pad, high + pad)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: number(value)))
    ax.set_xlabel("seconds")
    ax.set_ylabel(f"best cost\n({unit})")
    ax.legend(frameon=False, title="search")
    return _svg(fig, "Search cost over time")


def predicted_vs_measured(points: Sequence[tuple[str, float, float]], what: str,
                          log: bool = False, noun: str = "points") -> str:
    """Predicted against measured figures with the y = x line; on log axes (`log`) when the
    figures span decades. A few points (planners) each get a colour and a legend entry
    naming them; many (shared subtrees) are labelled only where farthest from the line."""
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    merged = _merged_labels(points)
    if len(merged) <= FEW_POINTS:
        for (name, x, y), colour in zip(merged, COLOURS, strict=False):
            ax.scatter([x], [y], color=colour, zorder=3, label=name)
    else:
        ax.scatter(xs, ys, color=ACCENT, zorder=3, s=18, label=f"{len(points)} {noun}")
        for name, x, y in _farthest(merged, LABELLED):
            ax.annotate(name, (x, y), xytext=(4, 3), textcoords="offset points", fontsize=7.5)
    if log and all(v > 0 for v in [*xs, *ys]):
        low, high = _decades([*xs, *ys])
        _log_scale(ax.xaxis, ax.set_xscale, ax.set_xlim, low, high)
        _log_scale(ax.yaxis, ax.set_yscale, ax.set_ylim, low, high)
    else:
        low, high = 0.0, max([*xs, *ys, 1e-9]) * 1.15
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
    ax.plot([low, high], [low, high], color=MUTED, lw=1, ls="--", label="measured = predicted")
    ax.set_xlabel(f"predicted {what}")
    ax.set_ylabel(f"measured {what}")
    labelled = "" if len(merged) <= FEW_POINTS else f" (labels: the {LABELLED} farthest off)"
    ax.legend(frameon=False, loc="upper left", fontsize=7.5, title=labelled.strip(" ()")
              or None, title_fontsize=7.5)
    return _svg(fig, f"Predicted against measured {what}")


def _farthest(points: Sequence[tuple[str, float, float]], count: int
              ) -> list[tuple[str, float, float]]:
    """The `count` points farthest from y = x (by ratio when both are positive)."""
    def off(point: tuple[str, float, float]) -> float:
        _, x, y = point
        return abs(math.log(y / x)) if x > 0 and y > 0 else abs(y - x)

    return sorted(points, key=off, reverse=True)[:count]


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
               column_label: str, legend: Mapping[float, str]) -> str:
    """A matrix of filled squares: row i × column j is filled when (i, j) is in `cells`,
    darker for larger values (which node each pattern uses, which patterns each grouped
    window runs), so a reader sees at a glance who shares what."""
    width = min(10.4, 1.6 + 0.19 * len(columns) + 0.06 * max(map(len, rows), default=0))
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.24 * len(rows)
                                    + 0.065 * max(map(len, columns), default=0)))
    top = max(cells.values(), default=1.0) or 1.0

    def shade(value: float) -> float:
        return 0.35 + 0.65 * (value / top)

    for (i, j), value in cells.items():
        ax.add_patch(plt.Rectangle((j - 0.42, i - 0.42), 0.84, 0.84, color=ACCENT,
                                   alpha=shade(value), lw=0))
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
    ax.legend(handles=[Patch(color=ACCENT, alpha=shade(value), label=label)
                       for value, label in sorted(legend.items())],
              frameon=False, loc="upper left", bbox_to_anchor=(0.0, 0.0), ncol=4, fontsize=8)
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
    served queries' thresholds: a pair may share one operator execution only above both.
    Pairs at the same place are one dot, its area and label saying how many."""
    counts = Counter(points)
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    for meets, colour, label in ((True, ACCENT, "meets thresholds"),
                                 (False, MUTED, "below thresholds")):
        chosen = [(p, n) for p, n in counts.items() if p[2] == meets]
        ax.scatter([p[0] for p, _ in chosen], [p[1] for p, _ in chosen], color=colour,
                   s=[12 + 6 * math.sqrt(n) for _, n in chosen], alpha=0.75,
                   label=f"{label} ({sum(n for _, n in chosen)} pairs)", zorder=3)
    if len(counts) <= LABELLED_COUNTS:
        for (precision, recall, _), n in counts.items():
            if n > 1:
                ax.annotate(f"{n}", (precision, recall), xytext=(5, -3),
                            textcoords="offset points", fontsize=7, color="#57606a")
    for i, (precision, recall) in enumerate(sorted(set(thresholds))):
        ax.axvline(precision, color=RED, lw=0.8, ls="--",
                   label="thresholds (precision, recall)" if i == 0 else None)
        ax.axhline(recall, color=RED, lw=0.8, ls="--")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("expected precision")
    ax.set_ylabel("expected recall")
    ax.legend(frameon=False, loc="upper left", fontsize=7.5)
    return _svg(fig, "Neighbour pairs against quality thresholds")


def switch_timeline(switches: Sequence[tuple[float, float | None, float | None]], unit: str,
                    title: str) -> str:
    """Each plan switch at its watermark (a vertical line) with the throughput measured before
    it (grey) and after it (blue), events per second of work."""
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    span = max((w for w, _, _ in switches), default=1.0) or 1.0
    step = span * 0.02
    for count, (mark, before, after) in enumerate(switches, start=1):
        ax.axvline(mark, color=MUTED, linestyle=":", linewidth=1)
        ax.annotate(f"switch {count}", (mark, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -10), textcoords="offset points", fontsize=8)
        if before is not None:
            ax.plot([mark - step], [before], "o", color=MUTED,
                    label="before a switch" if count == 1 else None)
        if after is not None:
            ax.plot([mark + step], [after], "o", color=ACCENT,
                    label="after a switch" if count == 1 else None)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"watermark ({unit})")
    ax.set_ylabel("events/s")
    ax.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.02), ncol=2)
    return _svg(fig, title)


def _decades(values: Sequence[float]) -> tuple[float, float]:
    """Axis limits for positive values on a log scale: from the decade below the smallest
    (or a third of it, when all values lie within one decade) to a little above the largest."""
    positive = [v for v in values if v > 0] or [1.0]
    low, high = min(positive), max(positive)
    floor = 10.0 ** math.floor(math.log10(low))
    return (floor if high / low >= 10 else low / 3, high * 1.4)


def _log_scale(axis: Any, set_scale: Any, set_limits: Any, low: float, high: float) -> None:
    """A log axis from `low` to `high`, ticks at 1, 2 and 5 of each decade (at 1 only past a
    few decades, where they would crowd), in plain numbers."""
    set_scale("log")
    set_limits(low, high)
    decades = math.log10(high / low) if low > 0 else 0.0
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)))
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
