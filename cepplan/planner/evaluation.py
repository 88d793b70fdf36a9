"""The evaluation pass (seed 004): each pattern's evaluation tree and the subtrees patterns
share, found by `cepplan.search`, written into `patterns.*.tree`, `patterns.*.order` and the
plan's `sharing` section (docs/sharing.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from cepplan.errors import InputError
from cepplan.planner.deadline import with_time_note
from cepplan.planner.plan import Plan
from cepplan.search.local import BUSHY, LEFT_DEEP
from cepplan.search.neighbourhood import parse_neighbourhood
from cepplan.search.problem import Problem as SearchProblem
from cepplan.search.problem import problem_from_workload
from cepplan.search.solve import ALGORITHMS, SearchOutOfTime, SearchResult, search
from cepplan.workload.model import Statistics, Workload

NONE = "none"
SEARCHES = (*ALGORITHMS, NONE)
# --sharing: any common subtree (multitrees, seed 004 §5) or common join-order prefixes only
# (multi-pattern trees of left-deep orders, §3)
SHARING_SHAPES = {"subtree": BUSHY, "prefix": LEFT_DEEP}
PATIENCE = 3000  # neighbours evaluated without improvement before a search stops early
SKIPPED = "evaluation search skipped (every pattern keeps its join order, nothing shared)"


@dataclass(frozen=True)
class EvaluationSettings:
    """`cepplan optimize --search/--neighborhood/--time-limit/--seed`."""

    search: str = "tabu"
    neighborhood: str = "edge"
    time_limit: float = 10.0
    seed: int = 0
    patience: int | None = PATIENCE
    sharing: str = "subtree"


def evaluation(workload: Workload, statistics: Statistics, plan: Plan,
               settings: EvaluationSettings, budget: float | None = None) -> Plan:
    """The plan with every plannable pattern's tree and join order, and the sharing section;
    unchanged with `--search none`. The search runs at most `budget` seconds (what planning
    has left; `settings.time_limit` when not given), and the plan records the time limit."""
    if settings.search == NONE:
        return plan
    _check_settings(settings)
    if budget is not None and budget <= 0:
        return with_time_note(plan, f"{SKIPPED}: no time was left for it")
    started = time.perf_counter()
    deadline = started + (settings.time_limit if budget is None else budget)
    try:
        problem = problem_from_workload(workload, statistics, _together(plan), deadline)
        result = search(problem, algorithm=settings.search, neighbourhood=settings.neighborhood,
                        shape=SHARING_SHAPES[settings.sharing], seed=settings.seed,
                        time_limit=max(1e-6, deadline - time.perf_counter()),
                        patience=settings.patience)
    except SearchOutOfTime as exc:
        return with_time_note(plan, f"{SKIPPED}: it would not have ended in time ({exc})")
    patterns = dict(plan.patterns)
    for name, tree in result.trees.items():
        negated = [o.var for o in workload.pattern(name).negated]
        patterns[name] = replace(patterns[name], tree=_json_tree(tree),
                                 order=(*result.orders[name], *negated))
    sharing = sharing_section(result, settings.time_limit)
    sharing["join_model"] = join_model(problem, result)
    return replace(plan, patterns=MappingProxyType(patterns), sharing=sharing)


def _check_settings(settings: EvaluationSettings) -> None:
    """Each setting the search would refuse, refused with the option that sets it (a bad time
    limit was blamed on --search)."""
    try:
        parse_neighbourhood(settings.neighborhood)
    except ValueError as exc:
        raise InputError.single("--neighborhood", "", str(exc)) from None
    for option, value, allowed in (("--search", settings.search, SEARCHES),
                                   ("--sharing", settings.sharing, tuple(SHARING_SHAPES))):
        if value not in allowed:
            raise InputError.single(option, "", f"{value!r} is not one of {', '.join(allowed)}")
    if not settings.time_limit > 0:
        raise InputError.single("--time-limit", "", f"must be more than 0 seconds, got "
                                f"{settings.time_limit}")


def _together(plan: Plan) -> tuple[frozenset[str], ...]:
    """The grouped context windows' workloads, when the workload has contexts: patterns
    that never run at the same time share nothing, and the search runs per group
    (seed 003 §5.3: grouping shrinks the optimizer's search space)."""
    groups = (plan.contexts or {}).get("groups") or ()
    return tuple(frozenset(g["patterns"]) for g in groups)


def sharing_section(result: SearchResult, time_limit: float) -> dict[str, Any]:
    """plan.json's `sharing`: shared nodes, modelled costs, the search and its trace; the
    time limit recorded is the user's (`result`'s is what the search was left of it)."""
    section: dict[str, Any] = {
        "cost_unit": "expected partial matches per window",
        "modelled_cost": {"chosen": result.cost, "trivial": result.trivial_cost,
                          "sh": result.sh_cost, "re": result.re_cost},
        "shared": [{"size": s.size, "window": s.window, "cost": s.cost,
                    "users": {name: _json_tree(t) for name, t in s.users.items()}}
                   for s in result.shared],
        "search": {"algorithm": result.algorithm, "neighborhood": result.neighbourhood,
                   "sharing": "prefix" if result.shape == LEFT_DEEP else "subtree",
                   "shape": result.shape, "seed": result.seed, "time_limit": time_limit,
                   "steps": result.steps, "seconds": round(result.seconds, 4),
                   "components": result.components, "graph_edges": result.edges,
                   "graph_complete": result.graph_complete},
        "trace": [list(point) for point in result.trace],
        "unplanned": dict(result.skipped),
    }
    if not result.edges:
        section["note"] = "nothing to share: no two patterns have a common subpattern of two " \
                          "or more events with the same conditions"
    return section


def join_model(problem: SearchProblem, result: SearchResult) -> dict[str, Any]:
    """Per user of a shared node, the figures its tree was priced with (rates, conditions'
    selectivities, the tree): the engine chooses from them, once per job, how the user's
    join goes on from the node's partial matches (docs/sharing.md, "What the engines do
    with it")."""
    users = {name for s in result.shared for name in s.users}
    return {p.name: {"rates": dict(p.rates),
                     "conditions": [[sorted(c.variables), c.selectivity] for c in p.conditions],
                     "tree": _json_tree(result.trees[p.name])}
            for p in problem.patterns if p.name in users and p.name in result.trees}


def _json_tree(tree: Any) -> Any:
    return [_json_tree(tree[0]), _json_tree(tree[1])] if isinstance(tree, tuple) else tree
