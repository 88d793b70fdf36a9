"""The engine's context stage (DESIGN.md "The engine", step 2; seed 003 §5.2, §6).

Deriving patterns (and the patterns they are built from) run first over every event; their
matches become context windows per partition (`context_windows.derive_windows`). Every other
pattern then sees only the events inside the windows of its contexts (push-down: a suspended
pattern receives nothing), runs once over all its grouped windows so partial matches carry
across the grouped windows of one holding (context history), and keeps the matches that lie
inside one holding. `grouped=False` runs each holding on its own instead (the non-shared
baseline of seed 003 §7.3.2); both give the same matches.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.context_windows import (
    ContextSpec,
    PartitionState,
    Windows,
    covered_time,
    derive_windows,
    instants,
    keep_match,
    window_mask,
)
from cepplan.engine_adapter.runtime.job import (
    Job,
    evaluate_partition,
    needed_attributes,
    partitions,
)
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS, match_partition
from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.records import MATCH_COLUMN, Renderer
from cepplan.engine_adapter.runtime.spec import NEGATED, PatternSpec
from cepplan.engine_adapter.runtime.table import make_table
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE


@dataclass
class ContextResult:
    """Matches and cap hits per pattern (as `LocalResult`), the windows, and per-pattern
    context metrics (share of events seen, share of time suspended)."""

    matches: dict[str, list[dict]] = field(default_factory=dict)
    cap_hits: dict[str, int] = field(default_factory=dict)
    windows: Windows | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


def has_contexts(job: Job) -> bool:
    return bool(job.data.get("contexts"))


@dataclass
class Derived:
    """The deriving stage's outcome: the windows and, for the deriving patterns and those they
    are built from, the matches that count, their complex events that feed the patterns above,
    Kleene cap hits and the rows each was evaluated over."""

    windows: Windows
    matches: dict[str, list[dict]]
    cap_hits: dict[str, int]
    seen: dict[str, int]
    complex_frames: list[pd.DataFrame]
    held_back: dict[str, int] = field(default_factory=dict)  # when evaluated over every event


def run_with_contexts(events: pd.DataFrame, job: Job, *, chunk_events: int = CHUNK_EVENTS,
                      grouped: bool = True) -> ContextResult:
    """All context-aware matches of every pattern in `job` over `events` (canonical columns)."""
    spec = ContextSpec.from_json(job.data["contexts"])
    used = {o.type for p in job.patterns for o in p.operands}
    derived = derive_contexts(events, job, spec, chunk_events)
    windows = derived.windows
    result = ContextResult(dict(derived.matches), dict(derived.cap_hits), windows)
    complex_frames = list(derived.complex_frames)
    keys = partition_keys(events, spec.partition_by)
    span = stream_span(events)
    for pattern in (p for p in job.patterns if p.name not in derived.matches):
        contexts = spec.contexts_of(pattern.name)
        frame = _pool(events, complex_frames, pattern)
        if contexts and grouped:
            inside = frame[pushed_down(frame, pattern, spec, windows)]
            found, hits, made = _evaluate(inside, job, pattern, pattern.name in used,
                                          chunk_events)
            rows_seen = len(inside)
        elif contexts:
            found, hits, made, rows_seen = _per_window(frame, job, pattern, windows, contexts,
                                                       spec, _margin(pattern),
                                                       pattern.name in used, chunk_events)
        else:
            found, hits, made = _evaluate(frame, job, pattern, pattern.name in used, chunk_events)
            rows_seen = len(frame)
        result.matches[pattern.name] = [
            m for m in found if keep_match(m, contexts, windows, spec.partition_by)]
        result.cap_hits[pattern.name] = hits
        if made is not None:
            complex_frames.append(_kept_rows(made, contexts, windows, spec))
        result.metrics[pattern.name] = pattern_metrics(
            len(frame), rows_seen, contexts, windows, keys, span)
    for name in derived.matches:
        frame = _pool(events, [], job.pattern(name))
        result.metrics[name] = pattern_metrics(len(frame), derived.seen.get(name, len(frame)),
                                               spec.contexts_of(name), windows, keys, span)
    return result


def derive_contexts(events: pd.DataFrame, job: Job, spec: ContextSpec,
                    chunk_events: int = CHUNK_EVENTS) -> Derived:
    """Deriving patterns first (DESIGN.md "The engine", step 2): the context windows per
    partition, and the counted matches of the deriving patterns and those they are built
    from. Evaluated lazily, only while they may count, unless they are single events or built
    from / bound by other patterns (then over every event of their types)."""
    first = built_from(spec.deriving, job)
    used = {o.type for p in job.patterns for o in p.operands}
    complex_frames: list[pd.DataFrame] = []
    raw: dict[str, tuple[list[dict], pd.DataFrame | None]] = {}
    seen: dict[str, int] = {}  # rows each deriving pattern was evaluated over
    cap_hits: dict[str, int] = {}
    held_back: dict[str, int] = {}
    single = all(len(job.pattern(n).operands) == 1 for n in first)  # cheap over every event
    if first == set(spec.deriving) and not first & used and not single:
        windows, counted, seen, cap_hits = derive_lazily(events, job, spec, chunk_events)
        raw = {name: (found, None) for name, found in counted.items()}
    else:  # deriving patterns of one event each, or built from / part of other patterns
        for pattern in (p for p in job.patterns if p.name in first):
            frame = _pool(events, complex_frames, pattern)
            found, hits, made = _evaluate(frame, job, pattern, pattern.name in used,
                                          chunk_events, held_back)
            raw[pattern.name] = (found, made)
            cap_hits[pattern.name] = hits
            seen[pattern.name] = len(frame)
            if made is not None:
                complex_frames.append(made)
        windows, counted = derive_windows({p: raw[p][0] for p in spec.deriving if p in raw},
                                          spec)
    matches: dict[str, list[dict]] = {}
    kept: list[pd.DataFrame] = []
    for name, (found, made) in raw.items():
        contexts = spec.contexts_of(name)
        matches[name] = counted[name] if name in counted else [
            m for m in found if keep_match(m, contexts, windows, spec.partition_by)]
        cap_hits.setdefault(name, 0)
        if made is not None:
            kept.append(_kept_rows(made, contexts, windows, spec))
    return Derived(windows, matches, cap_hits, seen, kept, held_back)


def pushed_down(frame: pd.DataFrame, pattern: PatternSpec, spec: ContextSpec,
                windows: Windows) -> np.ndarray:
    """The rows of `frame` a pattern receives (push-down, seed 003 Thm 1): those inside the
    windows of its contexts, widened by its window when it has a negated operand; every row
    for a pattern in no context."""
    contexts = spec.contexts_of(pattern.name)
    if not contexts:
        return np.ones(len(frame), dtype=bool)
    return window_mask(frame, EVENT_TS, windows, contexts, spec.partition_by,
                       _margin(pattern))


def _margin(pattern: PatternSpec) -> float:
    """How far outside its windows a pattern looks: its window when a negated operand may
    block a match from there (negation sees the whole stream), else nothing."""
    negation = any(o.kind == NEGATED for o in pattern.operands)
    return (pattern.window or 0.0) if negation else 0.0


def counting_mask(texts: Sequence[str], contexts: tuple[str, ...], windows: Windows,
            spec: ContextSpec) -> np.ndarray:
    """Which matches (JSON texts) count: those lying inside one holding of `contexts`."""
    if not contexts:
        return np.ones(len(texts), dtype=bool)
    return np.asarray([keep_match(json.loads(text), contexts, windows, spec.partition_by)
                       for text in texts], dtype=bool)


def metrics_section(result: ContextResult, job: Job) -> dict[str, Any]:
    """`metrics.json`'s `contexts` for a `run_with_contexts` result."""
    return contexts_metrics(result.windows, result.metrics,
                            {name: len(found) for name, found in result.matches.items()}, job)


def contexts_metrics(windows: Windows | None, patterns: Mapping[str, dict],
                     matches: Mapping[str, int], job: Job) -> dict[str, Any]:
    """`metrics.json`'s `contexts`: per pattern the share of events it saw, the share of time
    it was suspended and its matches, beside the plan's expected active share; the number of
    windows per context."""
    expected = job.data["contexts"].get("expected_active_share") or {}
    frame = windows.frame() if windows is not None else None
    counts = {} if frame is None else frame.groupby("context").size().to_dict()
    return {"patterns": {name: {**values, "matches": matches.get(name, 0),
                                "expected_active_share": expected.get(name)}
                         for name, values in patterns.items()},
            "windows": {str(k): int(v) for k, v in counts.items()}}


def derive_lazily(events: pd.DataFrame, job: Job, spec: ContextSpec, chunk_events: int
                  ) -> tuple[Windows, dict[str, list[dict]], dict[str, int], dict[str, int]]:
    """Deriving patterns evaluated per context partition only while one of their contexts
    holds: the state advances from one deriving match to the next, each active pattern
    evaluated up to a horizon whose step doubles while nothing fires (from the largest deriving
    window, or 1/256 of the stream, up to 8 windows or 1/16 of the stream) and starts again
    when something does; a pattern that becomes active is evaluated again from that instant.
    Negated operands look up to a window either side. Gives the windows `derive_windows`
    gives from matches over every event. Also returns the rows each pattern was evaluated
    over and its Kleene cap hits (an event in two overlapping evaluations counts twice)."""
    names = spec.deriving
    own_types = {n: {o.type for o in job.pattern(n).operands} for n in names}
    types = set().union(*own_types.values())
    frame = events[events[EVENT_TYPE].isin(types)]
    windows = Windows(spec.initial)
    counted: dict[str, list[dict]] = {n: [] for n in names}
    seen = dict.fromkeys(names, 0)
    hits = dict.fromkeys(names, 0)
    widest = max(job.pattern(n).window or 0.0 for n in names)
    span = float(frame[EVENT_TS].max() - frame[EVENT_TS].min()) if len(frame) else 0.0
    base = max(widest, span / 256, 1e-9)
    cap = max(8 * widest, span / 16, base)
    for key, part in _by_key(frame, spec.partition_by):
        part = part.sort_values(EVENT_TS, kind="stable")
        own = {n: part[part[EVENT_TYPE].isin(own_types[n])] for n in names}
        stamps = {n: rows[EVENT_TS].to_numpy(dtype=np.float64) for n, rows in own.items()}
        state = PartitionState(spec)
        first = part[EVENT_TS].iloc[0]
        cursor, step, end = first - 1.0, base, part[EVENT_TS].iloc[-1]
        while cursor < end:
            horizon = cursor + step
            blocks, evaluated, upcoming = [], False, math.inf
            for name in names:
                low = state.start_of(name)
                if low is None:
                    continue
                width = job.pattern(name).window or 0.0
                lo, hi = max(low, cursor - width) - width, horizon + width
                times = stamps[name]
                start, stop = np.searchsorted(times, [lo, hi], "right")
                later = int(np.searchsorted(times, horizon, "right"))
                upcoming = min(upcoming, times[later]) if later < len(times) else upcoming
                if start == stop:
                    continue
                evaluated = True
                seen[name] += int(stop - start)
                found, cut = _deriving_spans(own[name].iloc[start:stop], job, job.pattern(name),
                                             chunk_events, spec.partition_by, cursor, horizon,
                                             low)
                blocks += found
                hits[name] += cut
            if not evaluated:  # nothing of an active pattern until `upcoming`
                cursor, step = max(horizon, np.nextafter(upcoming, -math.inf)), base
                continue
            cursor, step = horizon, (min(2 * step, cap) if not blocks else base)
            for at, batch in instants(_in_order(blocks, names)):
                before = {n for n in names if state.start_of(n) is not None}
                for item in state.act(at, batch):
                    counted[item[2]].append(item[4]())
                if {n for n in names if state.start_of(n) is not None} - before:
                    cursor, step = at, base  # a pattern woke up: evaluate it from here
                    break
        windows.spans[key] = state.finish()
    return windows, counted, seen, hits


@dataclass(frozen=True)
class _Block:
    """Matches of one deriving pattern from one matcher call, as arrays; objects on demand."""

    last: np.ndarray
    first: np.ndarray
    pattern: PatternSpec
    renderer: Renderer
    found: Any  # the matcher's Matches
    rows: np.ndarray  # the rows of `found` these times belong to


def _deriving_spans(rows: pd.DataFrame, job: Job, pattern: PatternSpec, chunk_events: int,
                    within: tuple[str, ...], after: float, until: float,
                    low: float) -> tuple[list[_Block], int]:
    """The matches of a deriving pattern ending in (after, until] and starting after `low`
    (none earlier can count): their times from the matcher's ranks, and the Kleene cap hits."""
    blocks: list[_Block] = []
    hits = 0
    one_key = set(pattern.partition_by) <= set(within)  # rows hold one key value already
    for group in [rows] if one_key else partitions(rows, pattern.partition_by):
        table = make_table(group, needed_attributes(job, pattern))
        renderer = Renderer(table, job.types)
        for found in match_partition(table, pattern, job.stages[pattern.name],
                                     chunk_events=chunk_events, span=job.span):
            hits += found.cap_hits
            if not found.count:
                continue
            firsts = [table.ts[r] for r in found.single.values()]
            lasts = list(firsts)
            for sets in found.kleene.values():
                firsts.append(table.ts[np.fromiter((t[0] for t in sets), np.int64)])
                lasts.append(table.ts[np.fromiter((t[-1] for t in sets), np.int64)])
            first, last = np.min(firsts, axis=0), np.max(lasts, axis=0)
            wanted = np.flatnonzero((last > after) & (last <= until) & (first > low))
            if len(wanted):
                blocks.append(_Block(last[wanted], first[wanted], pattern, renderer, found,
                                     wanted))
    return blocks, hits


def _in_order(blocks: list[_Block], names: tuple[str, ...]):
    """The blocks' matches as deriving items (end, first, pattern, serial, render), by end
    time, made one at a time: consumption usually stops at the first change of context."""
    if not blocks:
        return
    rank = {n: i for i, n in enumerate(names)}
    last = np.concatenate([b.last for b in blocks])
    first = np.concatenate([b.first for b in blocks])
    which = np.concatenate([np.full(len(b.last), k) for k, b in enumerate(blocks)])
    position = np.concatenate([np.arange(len(b.last)) for b in blocks])
    ranks = np.array([rank[b.pattern.name] for b in blocks])[which]
    for i in np.lexsort((position, ranks, first, last)):
        block = blocks[which[i]]
        yield (float(last[i]), float(first[i]), block.pattern.name, int(position[i]),
               partial(_one_match, block.renderer, block.pattern, block.found,
                       int(block.rows[position[i]])))


def _one_match(renderer: Renderer, pattern: PatternSpec, found: Matches, row: int) -> dict:
    """Match `row` of `found` as its match object (rendered on its own: few deriving
    matches count)."""
    one = Matches({v: ranks[row:row + 1] for v, ranks in found.single.items()},
                  {v: [sets[row]] for v, sets in found.kleene.items()}, 1)
    return json.loads(renderer.match_lines(pattern, one))


def _by_key(frame: pd.DataFrame, keys: tuple[str, ...]):
    if not keys:
        if len(frame):
            yield (), frame
        return
    for key, group in frame.dropna(subset=list(keys)).groupby(list(keys), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        yield tuple(v.item() if isinstance(v, np.generic) else v for v in key), group


def built_from(roots: tuple[str, ...], job: Job) -> set[str]:
    """The patterns in `roots` and every pattern they bind, directly or not."""
    names, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in names or not job.is_complex(name):
            continue
        names.add(name)
        todo += [o.type for o in job.pattern(name).operands]
    return names


def _pool(events: pd.DataFrame, complex_frames: list[pd.DataFrame],
          pattern: PatternSpec) -> pd.DataFrame:
    types = {o.type for o in pattern.operands}
    parts = [events] + [f for f in complex_frames if len(f)]
    pool = pd.concat(parts, ignore_index=True) if len(parts) > 1 else events
    return pool[pool[EVENT_TYPE].isin(types)]


def _evaluate(frame: pd.DataFrame, job: Job, pattern: PatternSpec, with_complex: bool,
              chunk_events: int, held_back: dict[str, int] | None = None
              ) -> tuple[list[dict], int, pd.DataFrame | None]:
    """A pattern's match objects over every key, its cap hits and complex events; the
    matches held back added to `held_back` (pattern -> count), if given."""
    found, hits, made = [], 0, []
    for group in partitions(frame, pattern.partition_by):
        out = evaluate_partition(group, job, pattern, with_complex=with_complex,
                                 chunk_events=chunk_events)
        found += [json.loads(text) for text in out.texts()]
        hits += out.cap_hits
        if held_back is not None:
            held_back[pattern.name] = held_back.get(pattern.name, 0) + out.held_back
        if out.complex is not None:
            made.append(out.complex)
    return found, hits, (pd.concat(made, ignore_index=True) if made else None)


def _per_window(frame: pd.DataFrame, job: Job, pattern: PatternSpec, windows: Windows,
                contexts: tuple[str, ...], spec: ContextSpec, margin: float,
                with_complex: bool, chunk_events: int):
    """Each window of each context evaluated on its own; duplicates (a match inside windows of
    two contexts) reported once."""
    found: dict[str, dict] = {}
    made: dict[str, pd.DataFrame] = {}
    hits = rows = 0
    stamps = frame[EVENT_TS].to_numpy(dtype=np.float64)
    groups = ([((), np.arange(len(frame)))] if not spec.partition_by else
              [(k if isinstance(k, tuple) else (k,), i) for k, i in
               frame.groupby(list(spec.partition_by), sort=False).indices.items()])
    for key, index in groups:
        key = tuple(v.item() if isinstance(v, np.generic) else v for v in key)
        for context in contexts:
            for start, end in windows.pairs(key, context):
                inside = index[(stamps[index] > start - margin) & (stamps[index] <= end + margin)]
                part = frame.iloc[inside]
                rows += len(part)
                objects, cut, complex_part = _evaluate(part, job, pattern, with_complex,
                                                       chunk_events)
                hits += cut
                for obj in objects:
                    found.setdefault(json.dumps(obj, sort_keys=True), obj)
                if complex_part is not None:
                    for _, row in complex_part.iterrows():
                        made.setdefault(row[MATCH_COLUMN], row.to_frame().T)
    complex_frame = pd.concat(made.values(), ignore_index=True) if made else None
    return list(found.values()), hits, complex_frame, rows


def _kept_rows(frame: pd.DataFrame, contexts: tuple[str, ...], windows: Windows,
               spec: ContextSpec) -> pd.DataFrame:
    """The complex events whose match counts: only those feed the patterns above."""
    if not contexts:
        return frame
    return frame[counting_mask(frame[MATCH_COLUMN].tolist(), contexts, windows, spec)]


def partition_keys(events: pd.DataFrame, attributes: tuple[str, ...]) -> list[tuple]:
    """The context partitions present in `events` (one, (), without partition attributes)."""
    if not attributes:
        return [()]
    keys = events[list(attributes)].dropna().drop_duplicates()
    return [tuple(v.item() if isinstance(v, np.generic) else v for v in row)
            for row in keys.itertuples(index=False)]


def stream_span(events: pd.DataFrame) -> tuple[float, float]:
    if not len(events):
        return 0.0, 0.0
    stamps = events[EVENT_TS]
    return float(stamps.min()), float(stamps.max())


def pattern_metrics(rows_of_types: int, rows_seen: int, contexts: tuple[str, ...],
                     windows: Windows, keys: list[tuple], span: tuple[float, float]) -> dict:
    """Share of its types' events a pattern saw, and share of partition-time it was
    suspended (0 for a pattern active in every context)."""
    low, high = span
    total = len(keys) * (high - low)
    active = (covered_time(windows, keys, contexts, low, high) if contexts else total)
    return {"rows_of_its_types": rows_of_types, "rows_seen": rows_seen,
            "events_seen_share": rows_seen / rows_of_types if rows_of_types else 1.0,
            "suspended_time_share": float(1.0 - active / total) if total > 0 and contexts
            else 0.0,
            "contexts": list(contexts)}

