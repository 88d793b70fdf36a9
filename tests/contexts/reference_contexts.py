"""Brute-force context-aware matches: the context-independent reference matches, filtered.

Independent of the engine's context stage: the context history is replayed instant by instant
as a list of (time, closed, opened) steps per partition, and a match counts when one of its
pattern's contexts holds at every one of its events without being closed in between
(docs/contexts.md). Slow and obviously right; tests only.
"""

from __future__ import annotations

import math

import pandas as pd

from cepplan.workload.context_model import pattern_contexts
from cepplan.workload.model import Workload
from tests.engine.reference_matcher import reference_matches


def reference_context_matches(workload: Workload, events: pd.DataFrame) -> dict[str, list[dict]]:
    """Context-aware matches of every pattern (deriving ones: those that fired)."""
    everything = reference_matches(workload, events)
    where = pattern_contexts(workload)
    history = replay(workload, everything, where)
    return {name: [m for m in found if counts(m, workload, where, history)]
            for name, found in everything.items()}


def _bound(obj: dict) -> list[dict]:
    return [e for v in obj["events"].values() for e in (v if isinstance(v, list) else [v])]


def _key(obj: dict, attributes) -> tuple | None:
    for event in _bound(obj):
        if all(event.get(a) is not None for a in attributes):
            return tuple(event[a] for a in attributes)
    return None


def replay(workload: Workload, everything: dict, where: dict) -> dict[tuple, list]:
    """Per partition: the steps (time, closed contexts, opened contexts, holding after)."""
    contexts = workload.contexts
    keys = contexts.partition_by
    fired: dict[tuple, list] = {}
    for t in contexts.transitions:
        for obj in everything.get(t.on, []):
            key = _key(obj, keys) if keys else ()
            if key is not None:
                fired.setdefault(key, []).append(obj)
    history: dict[tuple, list] = {}
    for key, objs in fired.items():
        steps = [(-math.inf, set(), {contexts.initial}, {contexts.initial})]
        for at in sorted({max(e["ts"] for e in _bound(o)) for o in objs}):
            now = [o for o in objs if max(e["ts"] for e in _bound(o)) == at]
            active = [o for o in now if _holds_through(o, where.get(o["pattern"], ()),
                                                         steps)]
            holding = set(steps[-1][3])
            closed, opened = set(), set()
            for t in contexts.transitions:
                for _ in [o for o in active if o["pattern"] == t.on]:
                    before = set(holding)
                    if t.action == "initiate" and t.context not in holding:
                        holding.add(t.context)
                        if t.context != contexts.initial:
                            holding.discard(contexts.initial)
                    elif t.action == "terminate" and t.context in holding:
                        holding.discard(t.context)
                        if not holding:
                            holding.add(contexts.initial)
                    elif t.action == "switch" and t.source in holding:
                        holding.discard(t.source)
                        holding.add(t.target)
                    closed |= before - holding
                    opened |= holding - before
                    if t.action == "terminate" and t.context == contexts.initial \
                            and t.context in before:
                        closed.add(t.context)  # the default closed and reopened at once
            steps.append((at, closed, opened, holding))
        history[key] = steps
    return history


def _holds_through(obj: dict, contexts, steps: list) -> bool:
    """One of `contexts` holds for every event of the match with no close in between."""
    if not contexts:
        return True
    stamps = [e["ts"] for e in _bound(obj)]
    first, last = min(stamps), max(stamps)
    for context in contexts:
        before = [s for s in steps if s[0] < first]
        if context not in before[-1][3]:
            continue
        if not any(context in s[1] for s in steps if first <= s[0] < last):
            return True
    return False


def counts(obj: dict, workload: Workload, where: dict, history: dict) -> bool:
    """Whether a match counts: its own contexts, and every complex subevent it binds too."""
    contexts = where.get(obj["pattern"], ())
    keys = workload.contexts.partition_by
    for event in _bound(obj):
        if "events" in event and not counts(event, workload, where, history):
            return False
    if not contexts:
        return True
    key = _key(obj, keys) if keys else ()
    if key is None:
        return False
    steps = history.get(key, [(-math.inf, set(), {workload.contexts.initial},
                               {workload.contexts.initial})])
    return _holds_through(obj, contexts, steps)
