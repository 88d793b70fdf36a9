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
    by_key: dict[tuple, list[dict]] = {}
    for match in matches:
        any_event = _events_of(match)[0]
        by_key.setdefault(tuple(any_event[k] for k in partition_by), []).append(match)
    reported = []
    for group in by_key.values():
        group.sort(key=lambda m: (_events(m)[-1], _events(m)[0], _events(m)))
        kept: list[dict] = []
        for match in group:
            if not any(_forbids(k, _events(match)[0], skip) for k in kept):
                kept.append(match)
        reported += kept
    return reported


def _events_of(match: dict) -> list[dict]:
    return [e for bound in match["events"].values()
            for e in (bound if isinstance(bound, list) else [bound])]
