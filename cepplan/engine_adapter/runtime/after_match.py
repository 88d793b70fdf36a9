"""After-match skip (format doc, "After-match skip") over a run's matches as written.

Per user pattern and partition key, its matches are taken in one fixed order — by their last
event, then their first, then all their events, events ordered by (ts, id) — and each is kept
unless it starts before the point where an earlier kept match resumes. With a match
preference (`prefer`: MATCH_RECOGNIZE's row-pattern semantics) only the most preferred of the
matches sharing a first event is a candidate, and candidates are taken by their first event
(`kept_preferred`, over the written files only). Otherwise decided on arrays of
what the skip reads of each match (`SkipArrays`): from the matches' ranks before they are
rendered where one process matches the time ranges in order (`local.range_skip`), else in
one sequential pass over all the run's match files at its end; the matches kept are the
same whatever the time ranges, workers, engine or plan that found them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:  # faster parsing; optional, as Spark executors need only numpy, pandas and pyarrow
    from orjson import loads as _loads
except ImportError:
    from json import loads as _loads

Event = tuple[float, int]  # (ts, id): the order of events
Bound = tuple[Event, int]  # a match starting at event e is skipped when (e, 0) < the bound


@dataclass(frozen=True)
class SkipRule:
    """One user pattern's skip: kind (to_next_event, past_last_event, to_first, to_last),
    the variable a `to_first`/`to_last` names, the pattern's partition key, and its match
    preference (`greedy`, `reluctant` or "" for none) over its variables in pattern order."""

    kind: str
    var: str
    partition_by: tuple[str, ...]
    prefer: str = ""
    variables: tuple[str, ...] = ()


def skip_rules(data: Mapping[str, Any]) -> dict[str, SkipRule]:
    """The job's skips (`after_match` in the job data), by the name matches are written under."""
    return {name: SkipRule(rule["kind"], rule.get("var", ""), tuple(rule["partition_by"]),
                           rule.get("prefer", ""), tuple(rule.get("variables", ())))
            for name, rule in (data.get("after_match") or {}).items()}


def _events(match: Mapping[str, Any], var: str | None = None) -> list[Event]:
    """The (ts, id) of the events the match binds (to `var` alone, if given)."""
    out = []
    for name, bound in match["events"].items():
        if var is None or name == var:
            for event in bound if isinstance(bound, list) else (bound,):
                out.append((event["ts"], event["id"]))
    return out


def _key(match: Mapping[str, Any], rule: SkipRule) -> tuple:
    """The match's partition key (every event of a match has the same)."""
    bound = next(iter(match["events"].values()))
    event = bound[0] if isinstance(bound, list) else bound
    return tuple(event[k] for k in rule.partition_by)


# a match's key, its events in order, its bound and its rank (`_rank`; () without preference)
Summary = tuple[tuple, list[Event], Bound, tuple[int, ...]]


def summary(match: Mapping[str, Any], rule: SkipRule) -> Summary:
    """What the skip reads of a match: its partition key, its events in order, where the
    next match may start if it is kept, and its rank among matches with its first event."""
    events = sorted(_events(match))
    return _key(match, rule), events, _bound(match, rule, events), _rank(match, rule)


def _rank(match: Mapping[str, Any], rule: SkipRule) -> tuple[int, ...]:
    """The match's place in its pattern's preferment order (the smallest is preferred): the
    pattern position of each event's variable, events in order, then an end mark. Greedy, at
    the first event where two matches differ the one still on an earlier variable (taking one
    more repetition, or an optional variable) wins and ending last; reluctant, the reverse."""
    if not rule.prefer:
        return ()
    labels = sorted((event, rule.variables.index(var))
                    for var in match["events"] for event in _events(match, var))
    end = len(rule.variables)
    if rule.prefer == "greedy":
        return (*(position for _, position in labels), end)
    return (*(-position for _, position in labels), -end)


def _bound(match: Mapping[str, Any], rule: SkipRule, events: list[Event]) -> Bound:
    """Where the next match may start after `match` is kept: after its first event
    (to_next_event), after its last (past_last_event), at the first or the last event of
    `rule.var` (to_first, to_last); `events` in order."""
    if rule.kind == "to_next_event":
        return events[0], 1
    if rule.kind == "past_last_event":
        return events[-1], 1
    own = sorted(_events(match, rule.var))
    return (own[0] if rule.kind == "to_first" else own[-1]), 0


def kept(matches: Sequence[Mapping[str, Any]], rule: SkipRule,
         bounds: dict[tuple, Bound] | None = None) -> list[bool]:
    """Which of one pattern's matches its skip keeps (`kept_preferred` with a preference,
    else `kept_arrays`)."""
    return _kept_summaries([summary(m, rule) for m in matches], rule,
                           {} if bounds is None else bounds)


def _kept_summaries(summaries: Sequence[Summary], rule: SkipRule,
                    bounds: dict[tuple, Bound]) -> list[bool]:
    """Which of one pattern's matches (their `summary`) its skip keeps (module doc)."""
    if rule.prefer:
        return kept_preferred(summaries, bounds)
    return kept_arrays([summary_arrays(summaries)], bounds)[0].tolist()


def kept_preferred(summaries: Sequence[Summary], bounds: dict[tuple, Bound]) -> list[bool]:
    """Which of one pattern's matches (their `summary`, ranked) a skip with a preference
    keeps: the most preferred of each partition key and first event, by first event, each
    unless it starts before an earlier kept one's resume point (`bounds`, updated)."""
    best: dict[tuple, int] = {}
    for index, (key, events, _, rank) in enumerate(summaries):
        held = best.get((key, events[0]))
        if held is None or (rank, events) < (summaries[held][3], summaries[held][1]):
            best[(key, events[0])] = index
    keep = [False] * len(summaries)
    for index in sorted(best.values(), key=lambda i: (summaries[i][1][0], summaries[i][1])):
        key, events, here, _ = summaries[index]
        if key in bounds and (events[0], 0) < bounds[key]:
            continue
        keep[index] = True
        bounds[key] = max(bounds[key], here) if key in bounds else here
    return keep


@dataclass
class SkipArrays:
    """What the skip reads of a batch of matches, as arrays: per match its partition key, its
    first and last event and where the next match may resume (event, and 1 when after it),
    each event a (ts, id) pair; `events(row)`: its events in order, read only to order matches
    that share their first and last event."""

    keys: list[tuple]
    first: tuple[np.ndarray, np.ndarray]
    last: tuple[np.ndarray, np.ndarray]
    resume: tuple[np.ndarray, np.ndarray, np.ndarray]
    events: Callable[[int], list]

    def __len__(self) -> int:
        return len(self.keys)


def summary_arrays(found: Sequence[Summary]) -> SkipArrays:
    """The `SkipArrays` of matches given by their `summary`."""

    def column(pick: Callable[[Summary], Any]) -> np.ndarray:
        return np.asarray([pick(s) for s in found]).reshape(len(found))

    return SkipArrays([s[0] for s in found],
                      (column(lambda s: s[1][0][0]), column(lambda s: s[1][0][1])),
                      (column(lambda s: s[1][-1][0]), column(lambda s: s[1][-1][1])),
                      (column(lambda s: s[2][0][0]), column(lambda s: s[2][0][1]),
                       column(lambda s: s[2][1])),
                      lambda row: found[row][1])


def kept_arrays(batches: list[SkipArrays], bounds: dict[tuple, Bound]) -> list[np.ndarray]:
    """Which matches of one pattern its skip keeps (module doc), per batch of them (their
    `SkipArrays`), the batches taken together; `bounds` (partition key -> where the next
    match may start), holds what earlier calls kept (a live stream's matches arrive in
    batches, and one process's time ranges, each after every match that completes earlier)
    and is updated."""
    sizes = [len(b) for b in batches]
    if not sum(sizes):
        return [np.zeros(0, dtype=bool) for _ in batches]

    def joined(pick: Callable[[SkipArrays], np.ndarray]) -> np.ndarray:
        return np.concatenate([pick(b) for b in batches])

    first_ts, first_id = joined(lambda b: b.first[0]), joined(lambda b: b.first[1])
    last_ts, last_id = joined(lambda b: b.last[0]), joined(lambda b: b.last[1])
    order = np.lexsort((first_id, first_ts, last_id, last_ts)).tolist()
    place = [(i, row) for i, size in enumerate(sizes) for row in range(size)]
    order = _ties_ordered(order, (last_ts, last_id, first_ts, first_id),
                          lambda at: batches[place[at][0]].events(place[at][1]))
    keys = [k for b in batches for k in b.keys]
    starts = list(zip(first_ts.tolist(), first_id.tolist(), [0] * len(keys), strict=True))
    resumes = list(zip(joined(lambda b: b.resume[0]).tolist(),
                       joined(lambda b: b.resume[1]).tolist(),
                       joined(lambda b: b.resume[2]).tolist(), strict=True))
    flat = {key: (*bound[0], bound[1]) for key, bound in bounds.items()}
    keep = np.zeros(len(keys), dtype=bool)
    for at in order:
        key = keys[at]
        if key in flat and starts[at] < flat[key]:
            continue
        keep[at] = True
        flat[key] = max(flat[key], resumes[at]) if key in flat else resumes[at]
    bounds.update({key: ((ts, event), after) for key, (ts, event, after) in flat.items()})
    return np.split(keep, np.cumsum(sizes)[:-1])


def _ties_ordered(order: list[int], columns: tuple[np.ndarray, ...],
                  events: Callable[[int], list]) -> list[int]:
    """`order` with each run of matches sharing their first and last event ordered by all
    their events."""
    if len(order) < 2:
        return order
    ranked = np.asarray(order)
    same = np.logical_and.reduce([c[ranked[1:]] == c[ranked[:-1]] for c in columns])
    if not same.any():
        return order
    out, run = [], [order[0]]
    for at, tied in zip(order[1:], same.tolist(), strict=True):
        if not tied:
            out += sorted(run, key=events) if len(run) > 1 else run
            run = []
        run.append(at)
    return out + (sorted(run, key=events) if len(run) > 1 else run)


def skip_in_files(paths: Sequence[Path], rules: Mapping[str, SkipRule]) -> dict[str, int]:
    """Drop from the JSON-lines files `paths` (one run's) the matches the skips do not keep,
    each file rewritten by rename; the matches dropped per pattern. Only each match's
    `summary` and place are held, not the match."""
    heads = {('{"pattern": ' + json.dumps(name) + ', "events"').encode(): name
             for name in rules}  # matches, not the lines of timed-out partial matches
    found: dict[str, list[tuple[int, int, Summary]]] = {name: [] for name in rules}
    for file_index, path in enumerate(paths):
        with open(path, "rb") as lines:
            for line_index, line in enumerate(lines):
                name = next((n for h, n in heads.items() if line.startswith(h)), None)
                if name is not None:
                    found[name].append((file_index, line_index,
                                        summary(_loads(line), rules[name])))
    dropped: dict[int, set[int]] = {}
    counts = {}
    for name, entries in found.items():
        keep = _kept_summaries([entry[2] for entry in entries], rules[name], {})
        counts[name] = keep.count(False)
        for (file_index, line_index, _), kept_it in zip(entries, keep, strict=True):
            if not kept_it:
                dropped.setdefault(file_index, set()).add(line_index)
    for file_index, lines in dropped.items():
        _drop_lines(paths[file_index], lines)
    return counts


def _drop_lines(path: Path, lines: set[int]) -> None:
    """Rewrite `path` without the lines numbered `lines` (a temporary file renamed over it)."""
    temporary = path.with_name(path.name + ".skip")
    with open(path, "rb") as source, open(temporary, "wb") as target:
        for index, line in enumerate(source):
            if index not in lines:
                target.write(line)
    os.replace(temporary, path)


def apply_skips(staging: Path, data: Mapping[str, Any], metrics: dict[str, Any],
                by_range: Any = None, complete: bool = False) -> None:
    """The job's skips applied to the JSON lines under `staging/matches/` (a run's output
    before it is published); the matches each dropped go into `metrics`
    (`after_match_skipped`). `by_range`: the skips already applied to the first time ranges
    before rendering (`local.range_skip.RangeSkips`), whose drops count too; `complete`:
    they saw every match, and the files are not read again."""
    rules = skip_rules(data)
    if rules:
        clock = time.perf_counter()
        dropped = dict.fromkeys(rules, 0) if by_range is None else dict(by_range.dropped)
        left = rules if by_range is None or not complete else {
            name: rule for name, rule in rules.items() if name not in by_range.rules}
        if left:
            paths = sorted((staging / "matches").glob("*.jsonl"))
            for name, count in skip_in_files(paths, left).items():
                dropped[name] += count
        metrics["after_match_skipped"] = dropped
        spent = time.perf_counter() - clock + (by_range.seconds if by_range else 0.0)
        metrics.setdefault("seconds", {})["after-match skip"] = round(spent, 3)
