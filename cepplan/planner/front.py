"""One pattern's full Pareto front: positive subevents by DP or heuristics, then negation and
the naive plan (seed 002 §4.1: negated subevents are monitored after the positive ones, or
with everything in the naive one-step plan; OR has only the naive plan)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from cepplan.costmodels.operators import OR, PatternModel
from cepplan.planner import dp, heuristics
from cepplan.planner.candidates import Candidate, Option, evaluate, pareto_front

DP, HEURISTIC, NAIVE = "dp", "heuristic", "naive"


def pattern_front(model: PatternModel, options: Mapping[str, Sequence[Option]], solver: str,
                  max_latency: int | None = None,
                  deadline: float | None = None,
                  naive: Candidate | None = None) -> tuple[list[Candidate], str]:
    """(Pareto front, solver used). `solver` is dp or heuristic; a DP past its deadline falls
    back to the heuristics and says so. Variables bound to the same source are re-costed with
    shared transmissions (`grouped_cost`); the DP is exact for distinct sources. `naive`:
    the naive plan when the caller has it already."""
    naive = naive or naive_plan(model, options)
    if model.operator == OR:
        return [naive], NAIVE
    used = solver
    if deadline is not None and time.perf_counter() > deadline:
        # the time limit is spent: the naive plan, already costed, is the best found so far
        # (costing even one heuristic plan per remaining pattern overran the limit 3x)
        return [naive], f"{NAIVE} (time limit reached)"
    if solver == DP:
        try:
            positive = dp.solve(model, options, _reserve(deadline))
        except dp.DeadlineExceeded as exc:
            positive = heuristics.solve(model, options, max_latency, deadline)
            used = ("heuristic (dp too large)" if "GiB" in str(exc)
                    else "heuristic (dp timed out)")
    else:
        positive = heuristics.solve(model, options, max_latency, deadline)
    negated = [o.var for o in model.negatives]
    if not negated:
        if _shares_sources(model):
            positive = [evaluate(model, c.steps, options, c.choices) for c in positive]
        return pareto_front([*positive, naive]), used
    complete = [naive]
    for plan in positive:
        for neg_choice in _negated_choices(negated, options):
            steps = (*plan.steps, frozenset(negated))
            complete.append(evaluate(model, steps, options, {**plan.choices, **neg_choice}))
    return pareto_front(complete), used


def naive_plan(model: PatternModel, options: Mapping[str, Sequence[Option]]) -> Candidate:
    """Every subevent monitored in one step, each with its fastest option: the plan every
    pattern gets whatever the time left."""
    fastest = {v: min(range(len(opts)), key=lambda i: (opts[i].latency, opts[i].cost))
               for v, opts in options.items()}
    return evaluate(model, (frozenset(options),), options, fastest)


def _reserve(deadline: float | None) -> float | None:
    """The DP's deadline: 80 % of the time left, the rest kept for the heuristic fallback."""
    if deadline is None:
        return None
    now = time.perf_counter()
    return now + 0.8 * max(0.0, deadline - now)


def _shares_sources(model: PatternModel) -> bool:
    """Whether some variables share a source: the DP then optimised the seed's additive cost,
    an upper bound, and its plans are re-costed with shared transmissions."""
    sources = [o.source for o in model.positives if o.source]
    return len(sources) != len(set(sources))


def _negated_choices(negated: list[str],
                     options: Mapping[str, Sequence[Option]]) -> list[dict[str, int]]:
    """Cheapest and fastest option sets for the negated subevents."""
    cheapest = {v: min(range(len(options[v])), key=lambda i: options[v][i].cost) for v in negated}
    fastest = {v: min(range(len(options[v])), key=lambda i: options[v][i].latency)
               for v in negated}
    return [cheapest] if cheapest == fastest else [cheapest, fastest]
