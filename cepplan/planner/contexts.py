"""The contexts pass (seed 003 §5): which patterns run in which grouped context windows.

Grouped windows at planning time are the context sets that can hold together in a partition
(the reachable states of the context model, `context_model.reachable_states`): each gets the
merged, de-duplicated workload of its contexts plus the patterns in no context (Listing 1,
with the windows' bounds unknown until run time). Each group's workload is planned on its own
by the acquisition pass, so search runs per group; the search-space reduction is the Bell
numbers of §5.3. Definition 2 relationships are inferred exactly on the context model: `a`
overlaps `b` when every deriving match that can open `a` fires while `b` holds and keeps it;
`a` is contained in `b` when, in addition, no deriving match that can fire while both hold
closes `b` and leaves `a` (the initial context's first window starts before anything, so it
is inside nothing). `group_windows` is Listing 1 over concrete windows.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from cepplan.costmodels.contexts import bell, grouped_search_space
from cepplan.fileio import read_json
from cepplan.planner.compose import Settings
from cepplan.planner.deadline import share as share_of
from cepplan.planner.plan import Plan
from cepplan.planner.shared import plan_workload
from cepplan.workload.context_model import (
    MAX_STATES,
    moves,
    pattern_contexts,
    reachable_states,
    state_name,
)
from cepplan.workload.model import Statistics, Workload


def group_windows(windows: Sequence[tuple[float, float, frozenset[str]]]
                  ) -> list[tuple[float, float, frozenset[str]]]:
    """Listing 1 (seed 003 §5.3): half-open windows (start, end] with their queries split at
    every bound into non-overlapping grouped windows, each with the de-duplicated union of the
    queries of the windows covering it. A sweep over the sorted bounds; the active queries are
    a multiset, so a query two windows share stays active until both have ended (Listing 1's
    line 16 would drop it at the first end). Stretches no window covers are left out."""
    events: dict[float, list[tuple[int, frozenset[str]]]] = {}
    for start, end, queries in windows:
        if start < end:
            events.setdefault(start, []).append((1, queries))
            events.setdefault(end, []).append((-1, queries))
    active: Counter[str] = Counter()
    covering = 0
    grouped: list[tuple[float, float, frozenset[str]]] = []
    previous = None
    for bound in sorted(events):
        if covering and previous is not None:
            queries = frozenset(active)
            if grouped and grouped[-1][1] == previous and grouped[-1][2] == queries:
                grouped[-1] = (grouped[-1][0], bound, queries)  # identical neighbours merged
            else:
                grouped.append((previous, bound, queries))
        for sign, queries in events[bound]:
            covering += sign
            active.update({q: sign for q in queries})
        active = +active
        previous = bound
    return grouped


def relationships(workload: Workload) -> list[dict[str, str]]:
    """Definition 2 on the context model: guaranteed overlap and containment."""
    contexts = workload.contexts
    if contexts is None:
        return []
    steps = moves(workload)
    found = []
    for inner in contexts.types:
        for outer in contexts.types:
            if inner == outer:
                continue
            opens = [(s, n) for s, n in steps if inner not in s and inner in n]
            if inner == contexts.initial or not opens or \
                    not all(outer in s and outer in n for s, n in opens):
                continue
            both = [(s, n) for s, n in steps if inner in s and outer in s]
            contained = all(outer in n or inner not in n for s, n in both)
            found.append({"context": inner, "in": outer,
                          "relation": "contained" if contained else "overlaps"})
    return found


def measured_shares(stats_file: str | None) -> dict[str, float]:
    """Share of partition-time each context set held, as `cepplan stats` measured it."""
    if not stats_file:
        return {}
    section = read_json(stats_file).get("contexts") or {}
    return {str(k): float(v) for k, v in (section.get("state_shares") or {}).items()}


def plan_contexts(workload: Workload, statistics: Statistics, plan: Plan, settings: Settings,
                  stats_file: str | None = None, share: bool = True,
                  deadline: float | None = None, end: float = math.inf) -> Plan:
    """Fill the plan's `contexts` section (nothing to do without contexts); the groups are
    planned in equal shares of the time left before `deadline` (default: the time limit
    from now; `end`: the whole run's, see `plan_workload`), and the whole workload's planning
    time is the acquisition pass's."""
    contexts = workload.contexts
    if contexts is None:
        return plan
    if deadline is None:
        deadline = time.perf_counter() + settings.time_limit
    where = pattern_contexts(workload)
    deriving = list(dict.fromkeys(t.on for t in contexts.transitions))
    shares = measured_shares(stats_file)
    groups = []
    grouped_seconds = 0.0
    states = reachable_states(workload)
    for position, state in enumerate(states):
        names = [p.name for p in workload.patterns
                 if not where.get(p.name) or state & set(where[p.name])]
        start = time.perf_counter()
        outcome = plan_workload(group_workload(workload, names), statistics, settings, share,
                                share_of(deadline, len(states) - position), end)
        seconds = time.perf_counter() - start
        grouped_seconds += seconds
        groups.append({"contexts": sorted(state), "patterns": names,
                       "deriving": [n for n in names if n in deriving],
                       "expected_time_share": (shares.get(state_name(state), 0.0)
                                               if shares else None),
                       "expected_cost": outcome.total, "planning_seconds": round(seconds, 4)})
    whole_seconds = plan.provenance.get("seconds", 0.0)
    sizes = [len(g["patterns"]) for g in groups]
    complete = len(groups) < MAX_STATES  # more sets may hold together than were explored
    section = {
        "partition_by": list(contexts.partition_by), "initial": contexts.initial,
        "deriving": deriving,
        "pattern_contexts": {p.name: list(where.get(p.name, ())) for p in workload.patterns},
        "relationships": relationships(workload),
        "groups": groups,
        "groups_complete": complete,
        "expected_active_share": _active_shares(workload, groups, shares),
        "search_space": {"patterns": len(workload.patterns),
                         "whole": _json_int(bell(len(workload.patterns))),
                         "grouped": _json_int(grouped_search_space(sizes))},
        "planning_seconds": {"whole": round(whole_seconds, 4),
                             "grouped": round(grouped_seconds, 4)},
    }
    return replace(plan, contexts=MappingProxyType(section))


def group_workload(workload: Workload, names: Sequence[str]) -> Workload:
    """The workload restricted to `names` and the patterns they bind (no contexts)."""
    keep, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        todo += [o.event_type for o in workload.pattern(name).operands if o.is_complex]
    patterns = tuple(p for p in workload.patterns if p.name in keep)
    return replace(workload, patterns=patterns, contexts=None)


def _active_shares(workload: Workload, groups: list[dict],
                   shares: Mapping[str, float]) -> dict[str, float | None]:
    """Per pattern, the expected share of partition-time it runs: the shares of its groups."""
    if not shares:
        return {p.name: None for p in workload.patterns}
    return {p.name: round(sum(g["expected_time_share"] or 0.0 for g in groups
                              if p.name in g["patterns"]), 6) for p in workload.patterns}


def _json_int(value: int) -> int | float:
    return value if value < 2 ** 63 else float(value)



def contexts_summary(plan: Plan) -> list[str]:
    """Lines for the terminal: the groups of patterns that run together, how long each is
    expected to hold, and what grouping saved in search space and planning time."""
    section = plan.contexts
    if not section:
        return []
    lines = [f"contexts: {len(section['groups'])} sets of contexts can hold together; "
             f"deriving patterns run first: {', '.join(section['deriving'])}"]
    for group in section["groups"]:
        share = group["expected_time_share"]
        held = f"{share:.0%} of the time" if share is not None else "time share not measured"
        lines.append(f"  {' + '.join(group['contexts'])} ({held}): "
                     f"{', '.join(group['patterns'])}")
    space, seconds = section["search_space"], section["planning_seconds"]
    lines.append(f"planned per group: {space['grouped']:.4g} ways to group patterns for sharing "
                 f"instead of {space['whole']:.4g}; {seconds['grouped']:.3f} s for all groups "
                 f"vs {seconds['whole']:.3f} s for the whole workload")
    return lines
