"""The report's building blocks (sections, notes, tables, plots, headline cards, collapsible
parts) and its later sections — shared subtrees by whom, contexts and covering with and without,
what was measured on the events — so that the page and the Markdown say the same thing from one
description."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cepplan.report import plots


@dataclass(frozen=True)
class Note:
    text: str
    bad: bool = False
    strong: bool = False


@dataclass(frozen=True)
class Num:
    """A number in a table cell, with a unit suffix; sorts by its value."""

    value: float | int | None
    suffix: str = ""


@dataclass(frozen=True)
class Percent:
    value: float | None


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Marked:
    """A cell that is the best of its row or column (shown highlighted)."""

    cell: str


@dataclass(frozen=True)
class PlanChoice:
    """A planner's plan for a pattern: its notation, cost and latency; `best` when no
    planner's plan for the pattern costs less. Sorts by its cost."""

    plan: str
    cost: float | None
    latency: int
    best: bool


Cell = str | Num | Percent | Code | Marked | PlanChoice


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class Figure:
    """A plot, drawn only by the page (`draw` returns its `<svg>`), with an optional caption.
    Consecutive figures sit side by side."""

    draw: Callable[[], str]
    caption: str = ""


@dataclass(frozen=True)
class Card:
    """One headline figure: what (`title`), how much (`figure`) and in words (`text`); `tone`
    `saving`, `none` (nothing saved or not costed) or `bad` (a result to report)."""

    title: str
    figure: str
    text: str
    tone: str = "saving"


@dataclass(frozen=True)
class Cards:
    cards: tuple[Card, ...]


@dataclass(frozen=True)
class Details:
    """Blocks a reader opens when wanted (`summary` says what they hold); `open` shows them."""

    summary: str
    blocks: tuple[Block, ...]
    open: bool = False


@dataclass(frozen=True)
class Section:
    """A titled part of the report; `anchor` names it for links and tests."""

    title: str
    anchor: str
    blocks: tuple[Block, ...]


Block = Note | Table | Figure | Cards | Details | Section

LONG = 10  # rows past which a table, or plots past which a set of plots, starts collapsed


def collapsible(summary: str, blocks: Sequence[Block], count: int) -> Details:
    """Blocks of `count` rows or plots, collapsed when there are more than `LONG`."""
    return Details(f"{summary} ({count})", tuple(blocks), open=count <= LONG)


def format_cell(cell: Cell, formats: Mapping[type, Callable[[Any], Any]]) -> Any:
    """A cell in a renderer's terms: each kind of cell by the renderer's function for it."""
    return formats[type(cell)](cell)


def variant_blocks(report: Mapping[str, Any]) -> list[Block]:
    """Every later section the report has, in reading order."""
    measured = report.get("measured") or {}
    blocks: list[Block] = []
    if report.get("sharing"):
        blocks += sharing_blocks(report["sharing"], measured.get("shared_nodes"))
    if report.get("contexts"):
        blocks += contexts_blocks(report["contexts"])
    if report.get("covering"):
        blocks += covering_blocks(report["covering"])
    if measured:
        blocks += measured_blocks(measured)
    return blocks


def sharing_blocks(sharing: Mapping[str, Any],
                   measured: Sequence[Mapping[str, Any]] | None) -> list[Block]:
    """Which subtrees are computed once, and by which patterns."""
    nodes = sharing["nodes"]
    patterns = sharing["patterns"]
    column = {p: j for j, p in enumerate(patterns)}
    cells = {(i, column[p]): float(n["size"]) for i, n in enumerate(nodes)
             for p in n["patterns"]}
    rows = [f"{n['id']} ({n['size']} events)" for n in nodes]
    header = ["node", "shared subtree", "evaluation tree", "window", "patterns using it",
              "users", f"modelled ({sharing['unit']})"]
    if measured is not None:
        header.append("measured per window")
    table_rows, points = [], []
    for node in nodes:
        row: list[Cell] = [node["id"], Code(node["subtree"]), Code(node["tree"]),
                           Num(node["window"]), ", ".join(node["patterns"]),
                           Num(len(node["patterns"])), Num(node["cost"])]
        if measured is not None:
            found = _measured_node(node, measured)
            row.append(Num(found))
            if found and node["cost"]:
                points.append((node["id"], node["cost"], found))
        table_rows.append(tuple(row))
    scatter: list[Block] = [Figure(lambda: plots.predicted_vs_measured(
        points, "partial matches per shared subtree", log=True, noun="shared subtrees"))
                         ] if points else []
    sizes = {float(n["size"]): f"{n['size']} events" for n in nodes}
    return [Section("Shared subtrees, by whom", "sharing", (
        Note(f"The {sharing['search']} search's plan computes each of these subtrees once and "
             "feeds its partial matches to every pattern listed. Each subtree is written as "
             "its first user writes it; the others bind the same event types under the same "
             "conditions with their own variable names. Darker squares: larger subtrees."),
        Figure(lambda: plots.membership(rows, patterns, cells, "Shared subtrees by pattern",
                                        "shared subtree", "pattern", sizes)),
        *scatter,
        collapsible("Shared subtrees: what each computes and who uses it",
                    [Table(tuple(header), tuple(table_rows))], len(table_rows)),
    ))]


def contexts_blocks(contexts: Mapping[str, Any]) -> list[Block]:
    """The workload planned with its contexts and context-independently."""
    groups = contexts["groups"]
    names = [p["pattern"] for p in contexts["patterns"]]
    column = {p: j for j, p in enumerate(names)}
    labels = [f"{' + '.join(g['contexts'])} ({_share(g['expected_time_share'])})"
              for g in groups]
    cells = {(i, column[p]): 1.0 for i, g in enumerate(groups) for p in g["patterns"]}
    unit = contexts["unit"]
    shares = ("Time shares are those `cepplan stats` measured." if contexts["time_shares"]
              else "Time shares were not measured (plan with `--stats` from `cepplan stats` "
                   "on events): the cost with contexts needs them; comparing on event files "
                   "measures the share of time each pattern was suspended.")
    return [Section("Contexts: with and without", "contexts", (
        Note("Planned with the contexts pass, a pattern receives events only while one of "
             "its contexts holds (each grouped window planned on its own); "
             f"context-independently, every pattern runs all the time. {shares}"),
        Table(("plan", "what it does", f"modelled cost ({unit})"),
              tuple((v["name"], v["description"], Num(v["total_cost"]))
                    for v in contexts["variants"])),
        Figure(lambda: plots.membership(labels, names, cells,
                                        "Patterns each grouped window runs",
                                        "grouped window (share of time)", "pattern",
                                        {1.0: "the window runs the pattern"})),
        collapsible("Grouped windows", [Table(
            ("grouped window", "share of time", "patterns running", "patterns suspended",
             f"modelled cost ({unit})"),
            tuple((" + ".join(g["contexts"]), Percent(_percent(g["expected_time_share"])),
                   ", ".join(g["patterns"]), ", ".join(g["suspended"]) or "none",
                   Num(g["expected_cost"])) for g in groups))], len(groups)),
        collapsible("Patterns with and without contexts", [Table(
            ("pattern", "contexts", "active share", "cost independent", "cost with contexts",
             "latency independent", "latency with contexts"),
            tuple((p["pattern"], ", ".join(p["contexts"]) or "all the time",
                   Percent(_percent(p["expected_active_share"])),
                   Num(p["independent"]["cost"]), Num(p["with_contexts"]["cost"]),
                   Num(p["independent"]["latency"]), Num(p["with_contexts"]["latency"]))
                  for p in contexts["patterns"]))], len(contexts["patterns"])),
    ))]


def covering_blocks(covering: Mapping[str, Any]) -> list[Block]:
    """Operator executions with and without reuse, per covering solver."""
    unit = covering["unit"]
    solvers = covering["solvers"]
    rows = [(s["solver"], o) for s in solvers for o in s["operators"]]
    pairs = covering["pairs"]
    points = [(p["precision"], p["recall"], bool(p["meets_thresholds"])) for p in pairs]
    limits = [(p["thresholds"]["precision"], p["thresholds"]["recall"]) for p in pairs]
    return [Section("Covering: with and without reuse", "covering", (
        Note("Without covering, each consumer query computes its operator on its own "
             "selection; with covering, the operator runs once per covering selection and "
             "every query it covers within its quality thresholds reuses the result. The "
             "cover is the set of queries whose selections are computed."),
        Figure(lambda: plots.paired_bars(
            [f"{s} · {o['operator']}" for s, o in rows],
            [(o["executions_without_reuse"] or 0.0, o["executions_with_reuse"] or 0.0)
             for _, o in rows], ("without reuse", "with reuse"),
            [f"cover {o['cover_size']} of {o['queries']} queries" for _, o in rows], unit,
            "Operator executions with and without reuse")),
        collapsible("Covers per solver", [Table(
            ("solver", "operator", "queries", "cover size", "executions without reuse",
             "executions with reuse", "saving", "cover"),
            tuple((s, o["operator"], Num(o["queries"]), Num(o["cover_size"]),
                   Num(o["executions_without_reuse"]), Num(o["executions_with_reuse"]),
                   Percent(_saving(o)), ", ".join(o["cover"] or ())) for s, o in rows))],
            len(rows)),
        Note("Neighbour pairs: the result computed for the server's selection, reused by the "
             "served query, with its expected precision, recall and disparity against the "
             "served query's thresholds."),
        Figure(lambda: plots.thresholds_scatter(points, limits)),
        collapsible("Neighbour pairs", [Table(
            ("operator", "server", "served", "precision", "recall", "disparity", "thresholds",
             "meets"),
            tuple((p["operator"], p["server"], p["served"], Num(p["precision"]),
                   Num(p["recall"]), Num(p["disparity"]), _thresholds(p["thresholds"]),
                   "yes" if p["meets_thresholds"] else "no") for p in pairs))], len(pairs)),
    ))]


def measured_blocks(measured: Mapping[str, Any]) -> list[Block]:
    """Every run on the events beside the model's predictions."""
    runs = measured["runs"]
    blocks: list[Block] = []
    if measured["matches_equal"]:
        blocks.append(Note("Every plan found the same matches."))
    else:
        blocks.append(Note("The plans found different matches. Plans must change cost, never "
                           "results: this is a bug, please report it.", bad=True))
    factors = [(r["planner"], r["predicted_factor"], r["measured_factor"]) for r in runs
               if r.get("predicted_factor") is not None]
    if factors:
        blocks.append(Figure(lambda: plots.predicted_vs_measured(factors,
                                                                 "transmission factor")))
    partial = [(r["planner"], r["predicted_partial_matches"], r["partial_matches"])
               for r in runs if r.get("predicted_partial_matches") and r.get("partial_matches")]
    if partial:
        blocks.append(Figure(lambda: plots.predicted_vs_measured(
            partial, "partial matches per window", log=True)))
    blocks += [
        Note("Partial matches: what the matcher built (each distinct partial match of each "
             "join prefix once), per window of the stream, beside the model's expected "
             "partial matches per window for the same patterns (the plan's join order). The "
             "plan with shared subtrees is measured per subtree, in the sharing table."),
        Table(("planner", "rows to matchers", "predicted rows", "measured factor",
               "predicted factor",
               "partial matches per window", "predicted partial matches", "matches",
               "wall time"),
              tuple((r["planner"], Num(r["rows_to_matchers"]),
                     Num(r.get("predicted_rows_to_matchers")), Num(r["measured_factor"]),
                     Num(r.get("predicted_factor")), Num(r.get("partial_matches")),
                     Num(r.get("predicted_partial_matches")), Num(r["matches"]),
                     Num(r["seconds"], " s")) for r in runs))]
    sections = [Section("Measured on the events", "measured", tuple(blocks))]
    if measured.get("contexts"):
        sections.append(_contexts_measured(measured["contexts"]))
    if measured.get("covering"):
        sections.append(_covering_measured(measured["covering"]))
    return sections


def _contexts_measured(contexts: Mapping[str, Any]) -> Section:
    verdict = (Note("With contexts, every pattern's matches equal its context-independent "
                    "matches kept to the windows its contexts held (the windows derived from "
                    "the context-independent run's deriving matches).")
               if contexts["matches_equal"] else
               Note("With contexts, some pattern's matches differ from its "
                    "context-independent matches kept to the windows: this is a bug, please "
                    "report it.", bad=True))
    return Section("Measured: with and without contexts", "measured-contexts", (
        verdict,
        Note("Rows to matchers with contexts include the deriving patterns' rows, counted "
             "once per evaluation (their evaluations overlap at the horizons)."),
        Table(("plan", "rows to matchers", "matches", "wall time"),
              tuple((r["variant"], Num(r["rows_to_matchers"]), Num(r["matches"]),
                     Num(r["seconds"], " s")) for r in contexts["runs"])),
        collapsible("Matches per pattern with and without contexts", [Table(
            ("pattern", "contexts", "active share expected", "active share measured",
             "matches independent", "independent, in the windows", "matches with contexts",
             "equal"),
            tuple((p["pattern"], ", ".join(p["contexts"]) or "all the time",
                   Percent(_percent(p.get("expected_active_share"))),
                   Percent(_active(p["suspended_time_share"])),
                   Num(p["matches_independent"]), Num(p["matches_independent_in_windows"]),
                   Num(p["matches_with_contexts"]), "yes" if p["equal"] else "NO")
                  for p in contexts["patterns"]))], len(contexts["patterns"])),
    ))


def _covering_measured(rows: Sequence[Mapping[str, Any]]) -> Section:
    return Section("Measured: consumer queries with and without reuse", "measured-covering", (
        Note("Each covering solver run on the events: operator executions without reuse "
             "(one per query window) and with reuse, in all and per batch beside the model's "
             "expectation, results reused, and how many reused results fell below the served "
             "query's thresholds."),
        Table(("solver", "query windows", "executions without reuse", "executions with reuse",
               "saving", "with reuse per batch", "predicted per batch", "reused results",
               "below thresholds", "lowest precision reused", "lowest recall reused",
               "wall time"),
              tuple((r["solver"], Num(r["selections"]), Num(r["executions_without_reuse"]),
                     Num(r["executions_with_reuse"]), Percent(_percent(r["saved_share"])),
                     Num(r.get("with_reuse_per_batch")),
                     Num(r.get("predicted_with_reuse_per_batch")),
                     Num(r["reused_results"]), Num(r["threshold_violations"]),
                     Num(_lowest(r, "precision")), Num(_lowest(r, "recall")),
                     Num(r["seconds"], " s")) for r in rows)),
    ))


def _measured_node(node: Mapping[str, Any], measured: Sequence[Mapping[str, Any]]
                   ) -> float | None:
    """The engine's partial matches per window for this node: the entry with the same users
    and modelled figure (the engine evaluates one shared node per sharing group)."""
    for entry in measured:
        if sorted(entry["users"]) == sorted(node["patterns"]) and entry.get(
                "modelled_per_window") is not None and abs(
                entry["modelled_per_window"] - node["cost"]) <= 1e-9 * max(1.0, node["cost"]):
            return entry["per_window"]
    return None


def _lowest(row: Mapping[str, Any], what: str) -> float | None:
    qor = row.get("qor_of_reused") or {}
    return (qor.get(what) or {}).get("min")


def _saving(operator: Mapping[str, Any]) -> float | None:
    before, after = operator["executions_without_reuse"], operator["executions_with_reuse"]
    return None if not before or after is None else 100.0 * (1 - after / before)


def _percent(share: float | None) -> float | None:
    return None if share is None else 100.0 * share


def _active(suspended: float | None) -> float | None:
    return None if suspended is None else 100.0 * (1.0 - suspended)


def _share(share: float | None) -> str:
    return "share not measured" if share is None else f"{100 * share:.0f}%"


def _thresholds(qor: Mapping[str, float]) -> str:
    return ", ".join(f"{k} ≥ {v:g}" for k, v in qor.items())
