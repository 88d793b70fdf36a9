"""After-match skip (format doc, "After-match skip") over a run's matches as written.

Per user pattern and partition key, its matches are taken in one fixed order — by their last
event, then their first, then all their events, events ordered by (ts, id) — and each is kept
unless it starts before the point where an earlier kept match resumes. One sequential pass
over all the run's match files at its end, so the matches kept are the same whatever the
time ranges, workers, engine or plan that found them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # faster parsing; optional, as Spark executors need only numpy, pandas and pyarrow
    from orjson import loads as _loads
except ImportError:
    from json import loads as _loads

Event = tuple[float, int]  # (ts, id): the order of events
Bound = tuple[Event, int]  # a match starting at event e is skipped when (e, 0) < the bound


@dataclass(frozen=True)
class SkipRule:
    """One user pattern's skip: kind (to_next_event, past_last_event, to_first, to_last),
    the variable a `to_first`/`to_last` names, and the pattern's partition key."""

    kind: str
    var: str
    partition_by: tuple[str, ...]


def skip_rules(data: Mapping[str, Any]) -> dict[str, SkipRule]:
    """The job's skips (`after_match` in the job data), by the name matches are written under."""
    return {name: SkipRule(rule["kind"], rule.get("var", ""), tuple(rule["partition_by"]))
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


Summary = tuple[tuple, list[Event], Bound]  # a match's key, its events in order, its bound


def summary(match: Mapping[str, Any], rule: SkipRule) -> Summary:
    """What the skip reads of a match: its partition key, its events in order and where the
    next match may start if it is kept."""
    events = sorted(_events(match))
    return _key(match, rule), events, _bound(match, rule, events)


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
    """Which of one pattern's matches its skip keeps (`kept_summaries`)."""
    return kept_summaries([summary(m, rule) for m in matches], bounds)


def kept_summaries(summaries: Sequence[Summary],
                   bounds: dict[tuple, Bound] | None = None) -> list[bool]:
    """Which of one pattern's matches (their `summary`) its skip keeps (module doc);
    `bounds` (partition key -> where the next match may start), when given, holds what
    earlier calls kept (a live stream's matches arrive in batches, each after every match
    that completes earlier) and is updated."""
    bounds = {} if bounds is None else bounds
    keep = [False] * len(summaries)
    order = sorted(range(len(summaries)), key=lambda i: (summaries[i][1][-1],
                                                         summaries[i][1][0], summaries[i][1]))
    for index in order:
        key, events, here = summaries[index]
        if key in bounds and (events[0], 0) < bounds[key]:
            continue
        keep[index] = True
        bounds[key] = max(bounds[key], here) if key in bounds else here
    return keep


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
        keep = kept_summaries([entry[2] for entry in entries])
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
        if by_range is None or not complete:
            paths = sorted((staging / "matches").glob("*.jsonl"))
            for name, count in skip_in_files(paths, rules).items():
                dropped[name] += count
        metrics["after_match_skipped"] = dropped
        spent = time.perf_counter() - clock + (by_range.seconds if by_range else 0.0)
        metrics.setdefault("seconds", {})["after-match skip"] = round(spent, 3)
