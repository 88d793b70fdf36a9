"""Keep a multi-step plan only where its steps pay in time on the engine that will run it
(`costmodels.engine_steps`; docs/planner.md, "What a step costs on each engine").

After acquisition has chosen each pattern's cheapest plan in events, every pattern that no
other pattern reads and that reads no other pattern's matches is checked against its one-step
plan: a multi-step plan whose tested events cost more than the events it saves goes back to
one step, and if the multi-step plans left do not repay the engine's fixed cost per run over
the statistics' duration, they all do.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace

from cepplan.costmodels.engine_steps import (
    ENGINE_COSTS,
    EngineCosts,
    engine_shares,
    pays_for_run,
    step_saving,
)
from cepplan.costmodels.join_orders import JoinWork
from cepplan.costmodels.operators import PatternModel, grouped_cost
from cepplan.planner.candidates import Candidate, evaluate
from cepplan.planner.compose import NodeResult
from cepplan.planner.shared import SharedOutcome, evaluate_total
from cepplan.search.problem import search_pattern
from cepplan.workload.model import Statistics, Workload


def engine_steps(workload: Workload, outcome: SharedOutcome, engine: str,
                 duration: float | None) -> tuple[SharedOutcome, dict]:
    """The outcome with unprofitable multi-step plans replaced by one-step plans, and what
    was decided (for plan.json's provenance)."""
    costs = ENGINE_COSTS[engine]
    chosen = dict(outcome.chosen)
    savings: dict[str, float] = {}
    read = {o.event_type for p in workload.patterns for o in p.operands if o.is_complex}
    for name, plan in outcome.chosen.items():
        result = outcome.results[name]
        if len(plan.steps) < 2 or result.children or name in read:  # in a hierarchy
            continue
        single = one_step(result)
        options = {v: result.plain_options[v][plan.choices[v]].cost
                   for v in result.plain_options}
        savings[name] = saving(costs, result.model, plan, single, options)
        if savings[name] <= 0:
            chosen[name] = single
    staged = {n: s for n, s in savings.items() if s > 0}
    if staged and not pays_for_run(costs, sum(staged.values()), duration):
        for name in staged:
            chosen[name] = one_step(outcome.results[name])
    record = {"engine": engine, "duration": duration,
              "seconds_saved_per_time_unit": {n: round(s, 9) for n, s in savings.items()},
              "one_step": sorted(n for n in savings
                                 if len(chosen[n].steps) == 1)}
    if chosen == dict(outcome.chosen):
        return outcome, record
    total, _ = evaluate_total(workload, outcome.results, chosen)
    return replace(outcome, chosen=chosen, total=total), record


def saving(costs: EngineCosts, model: PatternModel, plan: Candidate, single: Candidate,
           options: Mapping[str, float]) -> float:
    """Seconds per time unit a multi-step `plan` saves over the one-step plan `single` on an
    engine of `costs` (negative: its tested events cost more than the events it saves), its
    events sent as the engine keeps them (`engine_shares`; `options`: each variable's
    events per time unit)."""
    tested = sum(model.operand(v).occurrence.rate for step in plan.steps[1:] for v in step)
    sent = grouped_cost(model, engine_shares(model, plan.steps), options)
    return step_saving(costs, single.cost, sent, tested)


def priced_join_orders(workload: Workload, statistics: Statistics, outcome: SharedOutcome,
                       deadline: float) -> tuple[dict[str, JoinWork], int]:
    """Per pattern whose join order is priced (`SearchPattern.step_work`), the cheapest order
    of its chosen plan's steps, and how many patterns were left unpriced when `deadline`
    passed: planning keeps its time limit, and their variables are joined in position order."""
    priced = {}
    for done, pattern in enumerate(workload.patterns):
        if time.perf_counter() >= deadline:
            return priced, len(workload.patterns) - done
        searched = search_pattern(pattern, workload, statistics)
        if searched is not None:
            name = pattern.name
            steps = positive_steps(outcome.results[name], outcome.chosen[name])
            priced[name] = searched.step_work(steps)
    return priced, 0


def join_figures(work: JoinWork) -> dict:
    """The modelled figures of a plan's join order (plan.json's provenance): per step the
    partial matches built and the rows read per window, and the rows read per time unit."""
    return {"order": list(work.order),
            "partial_matches_per_window": [_rounded(x) for x in work.built],
            "rows_read_per_window": [_rounded(x) for x in work.read],
            "rows_per_time_unit": work.per_time_unit()}


def _rounded(value: float) -> float:
    return float(f"{value:.6g}")


def positive_steps(result: NodeResult, chosen: Candidate) -> list[tuple[str, ...]]:
    """A plan's steps without their negated variables, each in position order."""
    position = {o.var: o.position for o in result.model.operands if not o.negated}
    steps = [tuple(sorted((v for v in step if v in position), key=position.__getitem__))
             for step in chosen.steps]
    return [step for step in steps if step]


def one_step(result: NodeResult) -> Candidate:
    """The pattern's plan monitoring every variable from the start."""
    choices = {o.var: 0 for o in result.model.operands}
    steps = (frozenset(o.var for o in result.model.operands),)
    return evaluate(result.model, steps, result.plain_options, choices)
