"""The brute-force reference of after-match skips, written from the format doc's definition
("After-match skip"), not from the engine's pass: per pattern and partition key, matches
taken by (last event, first event, all events), events ordered by (ts, id); a match is
reported unless some match reported before it forbids its first event:

- to_next_event: a reported match m forbids every event up to m's first;
- past_last_event: every event up to m's last;
- to_first v / to_last v: every event before the first / last event m binds to v.
"""

from __future__ import annotations


def _events(match: dict, var: str | None = None) -> list[tuple]:
    out = []
    for name, bound in match["events"].items():
        if var in (None, name):
            out += [(e["ts"], e["id"]) for e in (bound if isinstance(bound, list) else [bound])]
    return sorted(out)


def _forbids(earlier: dict, first: tuple, skip: str | dict) -> bool:
    """Whether the reported match `earlier` forbids a later match starting at `first`."""
    own = _events(earlier)
    if skip == "to_next_event":
        return first <= own[0]
    if skip == "past_last_event":
        return first <= own[-1]
    (kind, var), = skip.items()
    bound = _events(earlier, var)
    return first < (bound[0] if kind == "to_first" else bound[-1])


def reference_skip(matches: list[dict], skip: str | dict, partition_by: list[str]) -> list[dict]:
    """The matches (objects of one user pattern) that the skip reports."""
    if skip == "any":
        return list(matches)
    reported = []
    for group in _by_key(matches, partition_by):
        group.sort(key=lambda m: (_events(m)[-1], _events(m)[0], _events(m)))
        kept: list[dict] = []
        for match in group:
            if not any(_forbids(k, _events(match)[0], skip) for k in kept):
                kept.append(match)
        reported += kept
    return reported


def _by_key(matches: list[dict], partition_by: list[str]) -> list[list[dict]]:
    """The matches grouped by partition key."""
    by_key: dict[tuple, list[dict]] = {}
    for match in matches:
        any_event = _events_of(match)[0]
        by_key.setdefault(tuple(any_event[k] for k in partition_by), []).append(match)
    return list(by_key.values())


def _events_of(match: dict) -> list[dict]:
    return [e for bound in match["events"].values()
            for e in (bound if isinstance(bound, list) else [bound])]


def reference_preferred_skip(matches: list[dict], skip: str | dict, partition_by: list[str],
                             elements: list[tuple[str, int, int]], prefer: str) -> list[dict]:
    """The matches a skip with a match preference reports, from MATCH_RECOGNIZE's definition:
    per partition key, start events are tried in order; at each, of the matches starting there
    the first in preferment order is the match (ties: the earliest events), then the skip
    names where the next try may start. Preferment order is the order a backtracking matcher
    tries `elements` ((variable, min, max) in pattern order): greedy, each element from its
    most repetitions down, reluctant from its fewest up, the first element deciding first."""
    order = {labels: rank for rank, labels in enumerate(_tried(elements, prefer == "greedy"))}
    reported = []
    for group in _by_key(matches, partition_by):
        starts = sorted({_events(m)[0] for m in group})
        kept: list[dict] = []
        for first in starts:
            if any(_forbids(k, first, skip) for k in kept):
                continue
            here = [m for m in group if _events(m)[0] == first]
            kept.append(min(here, key=lambda m: (order[_labels(m)], _events(m))))
        reported += kept
    return reported


def _tried(elements: list[tuple[str, int, int]], greedy: bool) -> list[tuple[str, ...]]:
    """Every sequence of variables the elements can bind, in the order they are tried."""
    if not elements:
        return [()]
    (var, low, high), rest = elements[0], elements[1:]
    counts = range(high, low - 1, -1) if greedy else range(low, high + 1)
    return [(var,) * count + tail for count in counts for tail in _tried(rest, greedy)]


def _labels(match: dict) -> tuple[str, ...]:
    """The variables of the match's events, events ordered by (ts, id)."""
    return tuple(var for _, var in sorted(
        ((e["ts"], e["id"]), var) for var, bound in match["events"].items()
        for e in (bound if isinstance(bound, list) else [bound])))
