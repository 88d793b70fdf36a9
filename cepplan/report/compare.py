"""`compare`: every planner that applies to a workload, run side by side, as `report.json` data.

The report is plain JSON (format `cepplan.report/2`) so that the Markdown and HTML renderers,
the HTTP service and tests all read the same thing. Costs keep the unit of the model that
produced them (acquisition: expected events transmitted per time unit, seed 002 §4).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import cepplan
from cepplan.costmodels.count_spans import timed
from cepplan.costmodels.operators import delivered_share
from cepplan.costmodels.trees import cost_ord, node_cost
from cepplan.planner.compose import Settings
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.inputs import pattern_model
from cepplan.planner.optimize import Optimized, optimize
from cepplan.planner.plan import Plan, trivial_plan
from cepplan.report.pareto import pareto_fronts, pareto_notes
from cepplan.report.sharing import shared_nodes
from cepplan.report.summary import summarize
from cepplan.report.variants import (
    contexts_comparison,
    covering_comparison,
)
from cepplan.search.problem import problem_from_workload
from cepplan.workload.model import Statistics, Workload

FORMAT = "cepplan.report/2"


@dataclass(frozen=True)
class Planner:
    """One alternative the report shows: a name a user reads and how to plan with it."""

    name: str
    description: str
    solver: str
    share: bool = True


PLANNERS = (
    Planner("dp", "exact Pareto search, shared subevents sent once", "dp"),
    Planner("heuristic", "stepwise heuristics, shared subevents sent once", "heuristic"),
    Planner("dp-independent", "exact Pareto search, each pattern planned on its own", "dp",
            share=False),
)


SEARCHES = ("tabu", "sa")  # the evaluation pass's local searches, each run on its own


@dataclass(frozen=True)
class Comparison:
    """The `report.json` document and each planner's plan (to run them on events), with the
    variants: the plan whose shared subtrees run once, the context-independent plan, and each
    covering solver's plan section."""

    report: dict[str, Any]
    plans: dict[str, Plan]
    shared: Plan | None = None
    independent: Plan | None = None
    covering: dict[str, dict] = field(default_factory=dict)


def compare(workload: Workload, statistics: Statistics, settings: Settings, *,
            stats_file: str | None = None,
            progress: Callable[[str], None] = lambda _: None) -> Comparison:
    """Plan the workload with every planner of `PLANNERS` and describe them against the
    trivial plan (push every event, one step), then the evaluation searches of `SEARCHES`
    against their baselines; returns the `report.json` document and the plans."""
    unit = f"events/{workload.time_unit}"
    planners: list[dict[str, Any]] = []
    plans: dict[str, Plan] = {"trivial": trivial_plan(workload)}
    reference: Optimized | None = None
    partials = PartialMatches(workload, statistics)
    for planner in PLANNERS:
        progress(f"planning with {planner.name}")
        start = time.perf_counter()
        result = optimize(workload, statistics, replace(settings, solver=planner.solver),
                          stats_file, share=planner.share, invariants=False)
        seconds = time.perf_counter() - start
        reference = reference or result
        plans[planner.name] = result.plan
        planners.append(_planner_entry(planner, result.plan, result.outcome.total, seconds,
                                       unit, partials))
    assert reference is not None  # PLANNERS is not empty
    planners.insert(0, _trivial_entry(reference, unit, partials, plans["trivial"]))
    best = min(planners, key=lambda p: p["total_cost"])
    report = {
        "format": FORMAT,
        "cepplan": cepplan.__version__,
        "workload": {"name": workload.name, "path": workload.path, "sha256": workload.digest,
                     "time_unit": workload.time_unit,
                     "patterns": [p.name for p in workload.patterns]},
        "statistics": stats_file or "inline",
        "unit": unit,
        "planners": planners,
        "best": best["name"],
        "pareto": pareto_fronts(reference.plan),
        "pareto_notes": pareto_notes(workload, reference.plan),
    }
    evaluation_report, shared = _evaluation_searches(workload, statistics, reference.plan,
                                                     settings, progress)
    if evaluation_report:
        report["evaluation"] = evaluation_report
    if shared is not None and shared.sharing.get("shared"):
        report["sharing"] = shared_nodes(workload, shared.sharing)
    independent, covering = None, {}
    if workload.contexts is not None:
        progress("planning with and without contexts")
        report["contexts"], independent = contexts_comparison(
            workload, statistics, replace(settings, solver="dp"), reference.plan, stats_file)
    if workload.consumers is not None and workload.consumers.queries:
        progress("covering consumer queries with each solver")
        report["covering"], covering = covering_comparison(workload, statistics, settings)
    report["summary"] = summarize(report)
    return Comparison(report, plans, shared, independent, covering)


def _evaluation_searches(workload: Workload, statistics: Statistics, plan: Plan,
                         settings: Settings, progress: Callable[[str], None]
                         ) -> tuple[dict[str, Any] | None, Plan | None]:
    """Each evaluation search of `SEARCHES` on its own, beside the trivial, sharing-only (SH)
    and reordering-only (RE) evaluation plans, and the first search's plan; (None, None) when
    no two patterns share anything."""
    rows: list[dict[str, Any]] = []
    first: Plan | None = None
    traces: dict[str, list] = {}
    baselines: dict[str, float] = {}
    unit = ""
    for algorithm in SEARCHES:
        progress(f"searching evaluation trees with {algorithm}")
        searched = evaluation(workload, statistics, plan, EvaluationSettings(
            algorithm, "edge", settings.time_limit, settings.seed))
        sharing = searched.sharing
        if not sharing or "note" in sharing:
            return None, None
        first = first or searched
        unit = sharing["cost_unit"]
        cost = sharing["modelled_cost"]
        baselines = {"trivial": cost["trivial"], "sh": cost["sh"], "re": cost["re"]}
        search = sharing["search"]
        rows.append({"name": algorithm, "cost": cost["chosen"], "steps": search["steps"],
                     "seconds": search["seconds"], "shared": len(sharing["shared"])})
        traces[algorithm] = sharing["trace"]
    described = {"trivial": "each pattern alone, in its own order",
                 "sh": "share the largest common parts, orders fixed",
                 "re": "each pattern's cheapest tree, nothing shared"}
    searches = {"tabu": "tabu search", "sa": "simulated annealing"}
    rows = [{"name": name, "cost": cost, "description": described[name]}
            for name, cost in baselines.items()] + [
        {**row, "description": f"{searches[row['name']]}: {row['shared']} subtree(s) "
                               "computed once"} for row in rows]
    return {"unit": unit, "planners": rows, "traces": traces}, first


class PartialMatches:
    """Expected partial matches per window of a pattern joined in a given order (Cost_ord,
    seed 004 §3.3): what the matcher builds, beside what comparing on event files measures."""

    def __init__(self, workload: Workload, statistics: Statistics):
        workload = timed(workload, statistics)  # count windows as their time span
        problem = problem_from_workload(workload, statistics)
        self.patterns = {p.name: p for p in problem.patterns}
        self._workload, self._statistics = workload, statistics

    def of(self, name: str, order: Sequence[str],
           steps: Sequence[frozenset[str]] = ()) -> float | None:
        """None for a pattern the model does not cost (OR, complex subevents, too large).
        With the plan's detection `steps`, each prefix counts only the partial matches whose
        pulled events reach the matcher (`delivered_share`)."""
        pattern = self.patterns.get(name)
        if pattern is None:
            return None
        positive = [v for v in order if v in pattern.rates]
        if len(steps) < 2:
            return cost_ord(positive, pattern.window, pattern.rates, pattern.selectivities,
                            pattern.seq, pattern.cooccurrence)
        model = pattern_model(self._workload, self._workload.pattern(name), self._statistics,
                              {}, None)
        return sum(node_cost(positive[:k], pattern.window, pattern.rates,
                             pattern.selectivities, pattern.seq, pattern.cooccurrence)
                   * delivered_share(model, steps, frozenset(positive[:k]))
                   for k in range(1, len(positive) + 1))


def _planner_entry(planner: Planner, plan: Plan, total: float, seconds: float,
                   unit: str, partials: PartialMatches) -> dict[str, Any]:
    patterns = {}
    for name, body in plan.patterns.items():
        detection = body.detection
        patterns[name] = {"steps": [sorted(s) for s in detection.steps],
                          "cost": detection.expected_cost, "latency": detection.latency,
                          "solver": body.solver,
                          "partial_matches": partials.of(name, body.order, detection.steps)}
    return {"name": planner.name, "description": planner.description, "unit": unit,
            "total_cost": total, "seconds": round(seconds, 4), "patterns": patterns}


def _trivial_entry(reference: Optimized, unit: str, partials: PartialMatches,
                   trivial: Plan) -> dict[str, Any]:
    """The push-everything plan: one step per pattern, its cost the model's naive cost."""
    patterns = {}
    for name, body in reference.plan.patterns.items():
        variables = sorted(v for step in body.detection.steps for v in step)
        patterns[name] = {"steps": [variables], "cost": body.naive_cost, "latency": 1,
                          "solver": "trivial",
                          "partial_matches": partials.of(name, trivial.patterns[name].order)}
    return {"name": "trivial", "description": "push every event, detect in one step",
            "unit": unit, "total_cost": reference.outcome.naive_total, "seconds": 0.0,
            "patterns": patterns}
