"""The report's summary: what the chosen plan saves against the trivial plan, and where it comes
from — events sent (acquisition), partial matches (evaluation: sharing and reordering), contexts,
covering and, with `--events`, what was measured — in figures and words a reader takes in at a
glance. `report.json` carries it as `summary`; the page and report.md render the same one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cepplan.report.pareto import REASONS
from cepplan.report.text import notation, number

TOP_PATTERNS = 5  # patterns named in the summary, largest saving first
NAMED = 4  # patterns named in one line of the summary, the others counted


def summarize(report: Mapping[str, Any]) -> dict[str, Any]:
    """The `summary` of a report document (the measured figures when it has `measured`)."""
    planners = report["planners"]
    trivial = planners[0]
    chosen = chosen_planner(report)
    figures = [_acquisition(trivial, chosen, report["unit"])]
    if report.get("evaluation"):
        figures.append(_evaluation(report["evaluation"], report.get("sharing"),
                                   len(report["workload"]["patterns"])))
    if report.get("contexts"):
        figures.append(_contexts(report["contexts"]))
    if report.get("covering"):
        figures.append(_covering(report["covering"]))
    if report.get("measured"):
        figures.append(_measured(report["measured"], chosen["name"]))
    notes = _acquisition_notes(trivial, chosen, report["unit"])
    notes += _not_cheapest(report.get("pareto_notes") or {})
    return {"planner": chosen["name"], "headline": _headline(figures, chosen["name"]),
            "figures": figures, "patterns": _patterns(trivial, chosen), "notes": notes}


def chosen_planner(report: Mapping[str, Any]) -> Mapping[str, Any]:
    """The planner the summary speaks of: the cheapest besides trivial, the first on a tie
    (the exact search, which `cepplan optimize` runs)."""
    planners = report["planners"]
    return min(planners[1:] or planners, key=lambda p: p["total_cost"])


def fewer(value: float | None, baseline: float | None) -> str:
    """A saving as a reader says it: `2.8× fewer` from half on, `38% fewer` below, `no
    saving`, `12% more`."""
    if value is None or not baseline:
        return "not costed"
    if value <= 0.5 * baseline:
        return f"{baseline / value:.1f}× fewer" if value > 0 else "100% fewer"
    share = 1 - value / baseline
    if abs(share) < 0.0005:
        return "no saving"
    return f"{100 * abs(share):.1f}% {'fewer' if share > 0 else 'more'}"


def _figure(kind: str, title: str, unit: str, baseline: float | None, value: float | None,
            text: str, bad: bool = False) -> dict[str, Any]:
    saving = (1 - value / baseline) if baseline and value is not None else None
    return {"kind": kind, "title": title, "unit": unit, "baseline": baseline, "value": value,
            "saving": saving, "figure": fewer(value, baseline), "text": text, "bad": bad}


def _acquisition(trivial: Mapping[str, Any], chosen: Mapping[str, Any],
                 unit: str) -> dict[str, Any]:
    base, cost = trivial["total_cost"], chosen["total_cost"]
    return _figure("acquisition", "Events sent (acquisition)", unit, base, cost,
                   f"{_n(cost)} {unit} with the {chosen['name']} plan against {_n(base)} "
                   "pushing every event")


def _evaluation(evaluation: Mapping[str, Any], sharing: Mapping[str, Any] | None,
                patterns: int) -> dict[str, Any]:
    rows = evaluation["planners"]
    base = rows[0]["cost"]
    best = min(rows[1:] or rows, key=lambda r: r["cost"])
    text = (f"{_n(best['cost'])} expected partial matches per window with the "
            f"{best['name']} search's evaluation trees against {_n(base)} evaluating each "
            "pattern alone in its own order")
    if sharing and sharing["nodes"]:
        widest = max(sharing["nodes"], key=lambda n: len(n["patterns"]))
        text += (f"; {len(sharing['nodes'])} subtrees computed once for "
                 f"{len(sharing['patterns'])} of {patterns} patterns (the most shared, "
                 f"{widest['id']}, by {len(widest['patterns'])})")
    return _figure("evaluation", "Partial matches (evaluation)", evaluation["unit"], base,
                   best["cost"], text)


def _contexts(contexts: Mapping[str, Any]) -> dict[str, Any]:
    costs = {v["name"]: v["total_cost"] for v in contexts["variants"]}
    alone, aware = costs["context-independent"], costs["with contexts"]
    unit = contexts["unit"]
    if aware is None:
        text = ("not costed: it needs the share of time each context holds (plan with "
                "`--stats` from `cepplan stats`); context-independently "
                f"{_n(alone)} {unit}")
    else:
        text = (f"{_n(aware)} {unit} with patterns suspended outside their contexts against "
                f"{_n(alone)} running all the time")
    return _figure("contexts", "Events sent with contexts", unit, alone, aware, text)


def _covering(covering: Mapping[str, Any]) -> dict[str, Any]:
    solvers = covering["solvers"]
    best = min(solvers, key=lambda s: s["executions_with_reuse"]
               if s["executions_with_reuse"] is not None else float("inf"))
    operators = best["operators"]
    cover = sum(o["cover_size"] or 0 for o in operators)
    queries = sum(o["queries"] for o in operators)
    return _figure("covering", "Operator executions (covering)", covering["unit"],
                   best["executions_without_reuse"], best["executions_with_reuse"],
                   f"{_n(best['executions_with_reuse'])} against "
                   f"{_n(best['executions_without_reuse'])} {covering['unit']} with the "
                   f"{best['solver']} cover: {cover} of {queries} consumer queries computed, "
                   "the others reuse their results")


def _measured(measured: Mapping[str, Any], planner: str) -> dict[str, Any]:
    runs = {r["planner"]: r for r in measured["runs"]}
    base, rows = runs["trivial"]["rows_to_matchers"], runs[planner]["rows_to_matchers"]
    equal = measured["matches_equal"] and measured.get("contexts", {}).get(
        "matches_equal", True)
    verdict = ("every plan found the same matches" if equal else
               "the plans found different matches: this is a bug, please report it")
    return _figure("measured", "Rows to matchers (measured)", "rows", base, rows,
                   f"{_n(rows)} rows sent to the matchers on the events with the {planner} "
                   f"plan against {_n(base)} with the trivial plan; {verdict}", bad=not equal)


def _headline(figures: list[dict[str, Any]], planner: str) -> str:
    """One sentence: where the plan saves, each saving in its own unit."""
    saved = [f for f in figures if f["saving"] is not None and f["saving"] > 0.0005
             and f["kind"] != "measured"]
    acquisition = figures[0]
    start = (f"The {planner} plan sends {acquisition['figure']} events than pushing every event"
             if acquisition in saved else "No plan sends fewer events than pushing every event")
    others = [f"{f['title'].split(' (')[0].lower()}: {f['figure']}" for f in saved
              if f is not acquisition]
    if not others:
        return start + ("." if acquisition in saved else
                        ": the trivial plan is already the cheapest to acquire.")
    return f"{start}; {'; '.join(others)}."


def _patterns(trivial: Mapping[str, Any], chosen: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The patterns whose own events sent fall most, largest saving first."""
    rows = []
    for name, entry in chosen["patterns"].items():
        base = trivial["patterns"][name]["cost"]
        cost = entry["cost"]
        if base is None or cost is None or cost >= base * (1 - 1e-9):
            continue
        rows.append({"pattern": name, "plan": notation(entry["steps"]),
                     "latency": entry["latency"], "cost": cost, "trivial": base,
                     "saving": 1 - cost / base})
    rows.sort(key=lambda r: r["cost"] - r["trivial"])
    return rows[:TOP_PATTERNS]


def _acquisition_notes(trivial: Mapping[str, Any], chosen: Mapping[str, Any],
                       unit: str) -> list[str]:
    """Why patterns that each fetch fewer events leave the workload's total as it was: an
    event is sent once whoever asks for it."""
    pairs = [(trivial["patterns"][n]["cost"], e["cost"]) for n, e in chosen["patterns"].items()]
    if any(a is None or b is None for a, b in pairs):
        return []
    alone, planned = sum(a for a, _ in pairs), sum(b for _, b in pairs)
    if planned >= 0.99 * alone or chosen["total_cost"] < 0.99 * trivial["total_cost"]:
        return []
    steps = sum(1 for e in chosen["patterns"].values() if e["latency"] > 1)
    return [f"{steps} patterns fetch their events in steps; on their own they would ask for "
            f"{_n(planned)} {unit} instead of {_n(alone)}, but an event is sent once whoever "
            "asks for it, and some pattern still asks for every event of each type: the "
            "workload's events sent stay as they were."]


def _not_cheapest(notes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per reason naming the patterns that do not take their cheapest plan (the
    Pareto fronts say it of each)."""
    lines = []
    for reason, why in REASONS.items():
        names = [name for name, note in notes.items() if note["reason"] == reason]
        if not names:
            continue
        shown = ", ".join(names[:NAMED]) + (f" and {len(names) - NAMED} more"
                                            if len(names) > NAMED else "")
        lines.append(f"{len(names)} pattern{'s' if len(names) > 1 else ''} ({shown}) "
                     f"{'do' if len(names) > 1 else 'does'} not take the cheapest plan on "
                     f"{'their' if len(names) > 1 else 'its'} Pareto front: {why}.")
    return lines


def _n(value: float | int | None) -> str:
    return "–" if value is None else number(value)
