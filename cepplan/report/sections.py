"""The whole report as blocks, in reading order: the summary first (one screen), then the
planners side by side, each pattern's plan per planner, the Pareto fronts, the evaluation
searches and the later sections of `blocks`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cepplan.report import plots
from cepplan.report.blocks import (
    Block,
    Card,
    Cards,
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
    collapsible,
    variant_blocks,
)
from cepplan.report.plan_switches import switches_section
from cepplan.report.stream_latency import stream_section
from cepplan.report.summary import chosen_planner, summarize
from cepplan.report.text import notation, saving

OPEN_FRONTS = 6  # Pareto fronts drawn open; past that only those whose choice needs a word


def report_blocks(report: Mapping[str, Any]) -> list[Block]:
    """Every section of the report."""
    blocks = [summary_section(report), planners_section(report), patterns_section(report),
              pareto_section(report)]
    if report.get("evaluation"):
        blocks.append(evaluation_section(report["evaluation"]))
    if report.get("stream"):
        blocks.append(stream_section(report["stream"], report["workload"]["time_unit"]))
        if report["stream"].get("replans"):
            blocks.append(switches_section(report["stream"]["replans"],
                                           report["workload"]["time_unit"]))
    return blocks + variant_blocks(report)


def summary_section(report: Mapping[str, Any]) -> Section:
    """What the plan saves and where, in figures and words: headline cards, the patterns
    saving most, and why a pattern does not take its cheapest plan."""
    summary = summarize(report)
    blocks: list[Block] = [
        Note(summary["headline"], strong=True),
        Cards(tuple(Card(f["title"], f["figure"], f["text"], _tone(f))
                    for f in summary["figures"])),
    ]
    if summary["patterns"]:
        unit = report["unit"]
        blocks += [
            Note(f"Where the {summary['planner']} plan sends fewer events: the patterns saving "
                 "most, each fetching its later steps only within the window after the first "
                 "have matched."),
            Table(("pattern", "plan", "latency", f"events sent ({unit})",
                   "pushing every event", "saved", "saving"),
                  tuple((p["pattern"], Code(p["plan"]), Num(p["latency"]), Num(p["cost"]),
                         Num(p["trivial"]), Num(p["trivial"] - p["cost"]),
                         Percent(100 * p["saving"])) for p in summary["patterns"]))]
    blocks += [Note(text) for text in summary["notes"]]
    return Section("Summary", "summary", tuple(blocks))


def _tone(figure: Mapping[str, Any]) -> str:
    if figure["bad"]:
        return "bad"
    return "saving" if figure["saving"] is not None and figure["saving"] > 0.0005 else "none"


def planners_section(report: Mapping[str, Any]) -> Section:
    """Each planner's workload cost and saving against the trivial plan."""
    planners = report["planners"]
    unit = report["unit"]
    trivial = planners[0]["total_cost"]
    chosen = chosen_planner(report)["name"]
    others = planners[1:]
    if any(p["total_cost"] < trivial * (1 - 1e-9) for p in others):
        shown: Block = Figure(lambda: plots.saving_bars(
            [p["name"] for p in others], [p["total_cost"] for p in others], trivial, unit,
            chosen, "Saving per planner"))
    else:
        shown = Note(f"No planner sends fewer events than the trivial plan "
                     f"({trivial:.4g} {unit}).")
    table = Table(("planner", "what it does", f"modelled cost ({unit})", "saving vs trivial",
                   "planning time"),
                  tuple((Marked(p["name"]) if p["name"] == report["best"] else p["name"],
                         p["description"], Num(p["total_cost"]),
                         Percent(saving(p["total_cost"], trivial)), Num(p["seconds"], " s"))
                        for p in planners))
    return Section("Planners side by side", "planners", (
        Note(f"Modelled events sent to the matchers per time unit ({unit}) for the whole "
             "workload, each event counted once whoever asks for it. Highlighted: the "
             "cheapest planner (the first on a tie)."),
        shown, table))


def patterns_section(report: Mapping[str, Any]) -> Section:
    """Each pattern's plan per planner: patterns as rows, planners as columns, the cheapest
    plan of each row marked."""
    planners = report["planners"]
    rows = []
    for name in report["workload"]["patterns"]:
        entries = [p["patterns"].get(name) for p in planners]
        costs = [e["cost"] for e in entries if e is not None and e["cost"] is not None]
        low = min(costs, default=0.0)
        differ = bool(costs) and max(costs) > low * (1 + 1e-9)
        rows.append((name, *(
            "–" if e is None else PlanChoice(notation(e["steps"]), e["cost"], e["latency"],
                                             differ and e["cost"] is not None
                                             and e["cost"] <= low * (1 + 1e-9))
            for e in entries)))
    table = Table(("pattern", *(p["name"] for p in planners)), tuple(rows))
    return Section("Plan per pattern", "patterns", (
        Note(f"Each planner's plan for each pattern, with its modelled cost "
             f"({report['unit']}) and latency in plan steps; marked ✓: the cheapest plans of "
             "the pattern, where planners differ. Plan notation: `a,b -> c` watches a and b "
             "continuously and fetches c only within the window after they match."),
        collapsible("Plans of every pattern", [table], len(rows))))


def pareto_section(report: Mapping[str, Any]) -> Section:
    """A plot per pattern with a trade-off between cost and latency, each plan labelled; the
    fronts whose chosen plan is not the cheapest first, with the reason, the first
    `OPEN_FRONTS` of them open."""
    fronts = report["pareto"]
    notes = report.get("pareto_notes") or {}
    unit = report["unit"]
    traded = [name for name, front in fronts.items() if len(front) > 1]
    single = [name for name, front in fronts.items() if len(front) == 1]

    def figure(name: str) -> Figure:
        note = notes.get(name)
        return Figure(lambda: plots.pareto_front(name, fronts[name], unit, note is not None),
                      note["text"] if note else "")

    blocks: list[Block] = [Note(
        "Each row is a plan no other plan beats on both cost and latency (more steps, fewer "
        "events); the highlighted dot is the plan chosen, the cheapest within the pattern's "
        "latency bound unless a note says why not.")]
    first = [n for n in traded if n in notes]
    rest = [n for n in traded if n not in notes]
    if len(traded) <= OPEN_FRONTS:
        first, rest = traded, []
    first, noted = first[:OPEN_FRONTS], first[OPEN_FRONTS:]
    blocks += [figure(name) for name in first]
    if noted:
        blocks.append(Details(f"More Pareto fronts whose chosen plan is not the cheapest "
                              f"({len(noted)})", tuple(figure(name) for name in noted)))
    if rest:
        blocks.append(Details(f"The other Pareto fronts, each chosen plan the cheapest "
                              f"({len(rest)})", tuple(figure(name) for name in rest)))
    if single:
        blocks.append(Note(f"One plan is the cheapest at every latency (no trade-off to draw) "
                           f"for: {', '.join(single)}."))
    return Section("Pareto fronts: cost against latency", "pareto", tuple(blocks))


def evaluation_section(evaluation: Mapping[str, Any]) -> Section:
    """The evaluation searches beside their baselines, and their cost over time."""
    unit = evaluation["unit"]
    rows: Sequence[Mapping[str, Any]] = evaluation["planners"]
    trivial = rows[0]["cost"]
    best = min(rows[1:], key=lambda r: r["cost"])["name"]
    table = Table(("planner", "what it does", f"modelled cost ({unit})", "saving vs trivial",
                   "search steps", "search time"),
                  tuple((Marked(p["name"]) if p["name"] == best else p["name"],
                         p["description"], Num(p["cost"]), Percent(saving(p["cost"], trivial)),
                         Num(p.get("steps")), Num(p.get("seconds"), " s")) for p in rows))
    return Section("Evaluation trees: sharing between patterns", "evaluation", (
        Note(f"Costs in {unit}: how many partial matches the matcher builds, lower is faster. "
             "SH shares the largest common parts in fixed orders; RE reorders each pattern "
             "alone; the searches do both."),
        Figure(lambda: plots.saving_bars([r["name"] for r in rows[1:]],
                                         [r["cost"] for r in rows[1:]], trivial, unit, best,
                                         "Saving per evaluation plan")),
        table,
        Details("How the searches' best cost fell over time", (
            Figure(lambda: plots.convergence(evaluation["traces"], unit)),))))
