"""What a workload's contexts imply before any event arrives (seed 003 §3, §5.3).

Which contexts each pattern runs in (its own `contexts` plus the types that list it), which
context sets can hold together (the reachable states of the context model: the compile-time
grouped windows), and the problems a context model can have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cepplan.workload.model import Contexts, Workload

MAX_STATES = 512  # reachable context sets explored; beyond, the model is only partly known


def pattern_contexts(workload: Workload) -> dict[str, tuple[str, ...]]:
    """Pattern -> the context types it is active in; a pattern in none is absent (it runs all
    the time)."""
    contexts = workload.contexts
    if contexts is None:
        return {}
    found: dict[str, list[str]] = {}
    for pattern in workload.patterns:
        found.setdefault(pattern.name, []).extend(pattern.contexts)
    for context, names in contexts.types.items():
        for name in names:
            found.setdefault(name, []).append(context)
    return {name: tuple(sorted(set(v))) for name, v in found.items() if v}


def state_name(state: frozenset[str]) -> str:
    """A set of contexts holding together as one label: names sorted, joined by '+'."""
    return "+".join(sorted(state))


def job_contexts(workload: Workload, planned: Mapping[str, Any] | None = None
                 ) -> dict[str, Any] | None:
    """The job's `contexts` section: the model as plain JSON, with the plan's expected active
    share per pattern when it has one (None without contexts)."""
    contexts = workload.contexts
    if contexts is None:
        return None
    return {"initial": contexts.initial, "partition_by": list(contexts.partition_by),
            "transitions": [{"on": t.on, "action": t.action, "context": t.context,
                             "from": t.source, "to": t.target} for t in contexts.transitions],
            "pattern_contexts": {k: list(v) for k, v in pattern_contexts(workload).items()},
            "expected_active_share": dict((planned or {}).get("expected_active_share") or {})}


def _active(pattern: str, state: frozenset[str], where: Mapping[str, tuple[str, ...]]) -> bool:
    contexts = where.get(pattern, ())
    return not contexts or bool(state & set(contexts))


def step(state: frozenset[str], action: str, context: str | None, source: str | None,
         target: str | None, initial: str) -> frozenset[str]:
    """The context set after one transition (the rules of docs/contexts.md)."""
    holding = set(state)
    if action == "initiate" and context not in holding:
        holding.add(context)
        if context != initial:
            holding.discard(initial)
    elif action == "terminate" and context in holding:
        holding.discard(context)
        if not holding:
            holding.add(initial)
    elif action == "switch" and source in holding:
        holding.discard(source)
        holding.add(target)
    return frozenset(holding)


def fire(state: frozenset[str], pattern: str, contexts: Contexts) -> frozenset[str]:
    """The context set after one match of a deriving pattern: its transitions in listed order."""
    for t in contexts.transitions:
        if t.on == pattern:
            state = step(state, t.action, t.context, t.source, t.target, contexts.initial)
    return state


def moves(workload: Workload) -> list[tuple[frozenset[str], frozenset[str]]]:
    """Every (before, after) pair of one deriving match firing in a reachable context set
    (one match at a time; the initial set counts as reached), up to MAX_STATES sets."""
    contexts = workload.contexts
    if contexts is None:
        return []
    where = pattern_contexts(workload)
    deriving = list(dict.fromkeys(t.on for t in contexts.transitions))
    start = frozenset({contexts.initial})
    seen, todo, found = {start}, [start], []
    while todo and len(seen) < MAX_STATES:
        state = todo.pop()
        for pattern in deriving:
            if _active(pattern, state, where):
                new = fire(state, pattern, contexts)
                found.append((state, new))
                if new not in seen:
                    seen.add(new)
                    todo.append(new)
    return found


def reachable_states(workload: Workload) -> list[frozenset[str]]:
    """Every set of contexts that can hold together in one partition (compile-time grouped
    windows), from the initial one."""
    if workload.contexts is None:
        return []
    states = {frozenset({workload.contexts.initial})}
    states.update(s for move in moves(workload) for s in move)
    return sorted(states, key=lambda s: (len(s), sorted(s)))


@dataclass(frozen=True)
class ContextIssue:
    """One problem of a context model: JSON path, message, and whether it is an error."""

    path: str
    message: str
    error: bool


def context_issues(workload: Workload) -> list[ContextIssue]:
    """Errors (a switch from a context that can never hold, a deriving pattern whose own
    building blocks are confined to contexts) and warnings (patterns in no context, contexts
    that never hold or never end)."""
    contexts = workload.contexts
    if contexts is None:
        return []
    where = pattern_contexts(workload)
    states = reachable_states(workload)
    holdable = set().union(*states) if len(states) < MAX_STATES else set(contexts.types)
    issues = []
    for index, t in enumerate(contexts.transitions):
        path = f"contexts.transitions[{index}]"
        if t.action == "switch" and t.source == t.target:
            issues.append(ContextIssue(path, f"switch from {t.source!r} to itself: a switch "
                                       "must change the context", True))
        elif t.action == "switch" and t.source not in holdable:
            issues.append(ContextIssue(f"{path}.from", f"switch from {t.source!r}, which can "
                                       "never hold: no transition that can fire opens it",
                                       True))
        elif t.action == "terminate" and t.context not in holdable:
            issues.append(ContextIssue(f"{path}.context", f"terminates {t.context!r}, which "
                                       "can never hold", False))
        if t.on in workload.patterns_by_name and _confined_parts(workload, t.on, where):
            parts = ", ".join(_confined_parts(workload, t.on, where))
            issues.append(ContextIssue(f"{path}.on", f"deriving pattern {t.on!r} is built from "
                                       f"{parts}, which run only in some contexts; patterns a "
                                       "deriving pattern binds must run all the time", True))
    for name, members in contexts.types.items():
        if name not in holdable:
            issues.append(ContextIssue(f"contexts.types.{name}", f"context {name!r} can never "
                                       "hold (no transition that can fire opens it), so "
                                       f"{', '.join(members) or 'nothing'} never runs in it",
                                       False))
        elif name != contexts.initial and not _can_end(contexts, name):
            issues.append(ContextIssue(f"contexts.types.{name}", f"context {name!r} never ends "
                                       "once it holds: no terminate or switch leaves it", False))
    deriving = {t.on for t in contexts.transitions}
    for index, pattern in enumerate(workload.patterns):
        missing = [k for k in contexts.partition_by if k not in pattern.partition_by]
        if (pattern.name in where or pattern.name in deriving) and missing:
            issues.append(ContextIssue(f"patterns[{index}].partition_by", f"pattern "
                                       f"{pattern.name!r} takes part in contexts held per "
                                       f"{', '.join(contexts.partition_by)}, so it must be "
                                       f"partitioned by {', '.join(missing)} too", True))
        if pattern.name not in where and pattern.name not in deriving:
            issues.append(ContextIssue(f"patterns[{index}]", f"pattern {pattern.name!r} is in "
                                       "no context: it runs all the time, whatever the context",
                                       False))
    return issues


def _confined_parts(workload: Workload, name: str, where: Mapping) -> list[str]:
    parts, todo = [], [o.event_type for o in workload.pattern(name).operands if o.is_complex]
    while todo:
        part = todo.pop()
        if part in where and part not in parts:
            parts.append(part)
        todo += [o.event_type for o in workload.pattern(part).operands if o.is_complex]
    return sorted(parts)


def _can_end(contexts: Contexts, name: str) -> bool:
    return any((t.action == "terminate" and t.context == name)
               or (t.action == "switch" and t.source == name) for t in contexts.transitions)
