"""Context windows from deriving-pattern matches, and the tests a match or an event must pass.

Plain functions over match objects and pandas frames, so any engine can call them. The rules
(docs/contexts.md, seed 003 §3–§4): per context partition, deriving matches act at their end
time t; windows are half-open (start, end], so the event at t still belongs to the window a
transition at t closes; the initial (default) context holds at the start and whenever nothing
else does, and initiating any other context ends it (seed 003 §4.1, CI/CT); transitions at one
instant are applied in the order the workload lists them; a match counts only when every event
it binds lies inside one continuous holding of one of its pattern's contexts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

import numpy as np
import pandas as pd

INITIATE, SWITCH, TERMINATE = "initiate", "switch", "terminate"
WINDOW_COLUMNS = ("key", "context", "start", "end")


@dataclass(frozen=True)
class ContextSpec:
    """The job's `contexts` section: the context model and where each pattern is active."""

    initial: str
    partition_by: tuple[str, ...]
    transitions: tuple[Mapping[str, Any], ...]
    pattern_contexts: Mapping[str, tuple[str, ...]]  # absent pattern: active all the time

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContextSpec:
        return cls(str(data["initial"]), tuple(data.get("partition_by", ())),
                   tuple(data.get("transitions", ())),
                   {str(k): tuple(v) for k, v in data.get("pattern_contexts", {}).items()})

    @property
    def deriving(self) -> tuple[str, ...]:
        """The context deriving patterns, in the order their first transition is listed."""
        return tuple(dict.fromkeys(t["on"] for t in self.transitions))

    def contexts_of(self, pattern: str) -> tuple[str, ...]:
        return self.pattern_contexts.get(pattern, ())


@dataclass
class Windows:
    """Every context window per partition key: (start, end] with sorted, disjoint starts per
    (key, context); `end` is +inf for a window still holding when the stream ends."""

    initial: str
    spans: dict[tuple, dict[str, tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)

    def of(self, key: tuple) -> Mapping[str, tuple[np.ndarray, np.ndarray]]:
        """One key's windows per context; a key no deriving match touched holds the initial
        context throughout."""
        if key in self.spans:
            return self.spans[key]
        return {self.initial: (np.array([-math.inf]), np.array([math.inf]))}

    def pairs(self, key: tuple, context: str) -> list[tuple[float, float]]:
        """One key's windows of one context as (start, end) pairs."""
        starts, ends = self.of(key).get(context, ((), ()))
        return list(zip(starts, ends, strict=True))

    def frame(self) -> pd.DataFrame:
        rows = [(key, ctx, s, e) for key, by_ctx in self.spans.items() for ctx in by_ctx
                for s, e in self.pairs(key, ctx)]
        return pd.DataFrame(rows, columns=list(WINDOW_COLUMNS))

    def holdings(self, key: tuple, contexts: Sequence[str]) -> list[tuple[float, float]]:
        """The windows of any of `contexts` for one key, merged where they touch or overlap."""
        return merge_spans([span for c in contexts for span in self.pairs(key, c)])

    def inside_one(self, key: tuple, contexts: Sequence[str], first: float, last: float) -> bool:
        """Whether [first, last] lies inside one window (start, end] of one of `contexts`:
        among the windows starting before `first`, the latest end reaches `last`."""
        starts, reach = self._reach(key, tuple(contexts))
        index = int(np.searchsorted(starts, first, side="left")) - 1
        return index >= 0 and last <= reach[index]

    def _reach(self, key: tuple, contexts: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Starts of the windows of `contexts` in order, and the largest end up to each."""
        cache = self.__dict__.setdefault("_reach_cache", {})
        if (key, contexts) not in cache:
            spans = sorted(span for c in contexts for span in self.pairs(key, c))
            starts = np.array([s for s, _ in spans], dtype=np.float64)
            ends = np.array([e for _, e in spans], dtype=np.float64)
            cache[(key, contexts)] = (starts, np.maximum.accumulate(ends) if len(ends)
                                      else ends)
        return cache[(key, contexts)]


def merge_spans(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted half-open spans merged into disjoint ones."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def match_key(obj: Mapping[str, Any], attributes: Sequence[str]) -> tuple | None:
    """The context partition a match belongs to: `attributes` read from the first bound event
    that carries them all (None when no event does)."""
    if not attributes:
        return ()
    for value in obj["events"].values():
        for event in value if isinstance(value, list) else [value]:
            if all(event.get(a) is not None for a in attributes):
                return tuple(event[a] for a in attributes)
    return None


def match_span(obj: Mapping[str, Any]) -> tuple[float, float]:
    """(first, last) timestamp of the events a match binds (a complex subevent at its end)."""
    stamps = [e["ts"] for v in obj["events"].values() for e in (v if isinstance(v, list) else [v])]
    return min(stamps), max(stamps)


Item = tuple  # (end, first, pattern, serial, match object): one deriving match


def deriving_item(obj: Mapping[str, Any], pattern: str, serial: int) -> Item:
    first, last = match_span(obj)
    return (last, first, pattern, serial, obj)


class PartitionState:
    """One partition's context state, driven by deriving matches in end-time order."""

    def __init__(self, spec: ContextSpec):
        self.spec = spec
        self.holding: dict[str, float] = {spec.initial: -math.inf}
        self.spans: dict[str, list[tuple[float, float]]] = {}

    def start_of(self, pattern: str) -> float | None:
        """The earliest start of a holding context of `pattern` (None: suspended)."""
        contexts = self.spec.contexts_of(pattern)
        if not contexts:
            return -math.inf
        starts = [self.holding[c] for c in contexts if c in self.holding]
        return min(starts) if starts else None

    def counts(self, pattern: str, first: float) -> bool:
        contexts = self.spec.contexts_of(pattern)
        return not contexts or any(c in self.holding and self.holding[c] < first
                                   for c in contexts)

    def act(self, at: float, batch: Sequence[Item]) -> list[Item]:
        """Apply every match ending at `at`: those that count, in the listed transition order
        (validity judged before any of them acts). Returns the ones that counted."""
        valid = [item for item in batch if self.counts(item[2], item[1])]
        for transition in self.spec.transitions:
            for item in valid:
                if item[2] == transition["on"]:
                    self._apply(transition, at)
        return valid

    def _close(self, context: str, at: float) -> None:
        start = self.holding.pop(context)
        if start < at:  # a window (t, t] holds no event: dropped
            self.spans.setdefault(context, []).append((start, at))

    def _apply(self, transition: Mapping[str, Any], at: float) -> None:
        action, initial, holding = transition["action"], self.spec.initial, self.holding
        if action == INITIATE:
            context = transition["context"]
            if context not in holding:
                holding[context] = at
                if initial in holding and context != initial:
                    self._close(initial, at)
        elif action == TERMINATE:
            context = transition["context"]
            if context in holding:
                self._close(context, at)
                if not holding:
                    holding[initial] = at
        elif transition["from"] in holding:
            self._close(transition["from"], at)
            holding.setdefault(transition["to"], at)

    def finish(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The windows, those still holding ending at +inf."""
        spans = {c: list(v) for c, v in self.spans.items()}
        for context, start in self.holding.items():
            spans.setdefault(context, []).append((start, math.inf))
        return {c: (np.array([s for s, _ in sorted(v)]), np.array([e for _, e in sorted(v)]))
                for c, v in spans.items()}


def instants(items: Iterable[Item]):
    """Items in end-time order grouped by end time: (end, items ending then); lazy."""
    for at, batch in groupby(items, key=lambda item: item[0]):
        yield at, list(batch)


def derive_windows(deriving: Mapping[str, Sequence[Mapping[str, Any]]],
                   spec: ContextSpec) -> tuple[Windows, dict[str, list[dict]]]:
    """Windows per partition from the deriving patterns' context-independent matches, and the
    deriving matches that counted (those inside a holding of their pattern's contexts)."""
    by_key: dict[tuple, list[Item]] = {}
    for pattern, objects in deriving.items():
        for serial, obj in enumerate(objects):
            key = match_key(obj, spec.partition_by)
            if key is not None:
                by_key.setdefault(key, []).append(deriving_item(obj, pattern, serial))
    windows = Windows(spec.initial)
    counted: dict[str, list[dict]] = {p: [] for p in deriving}
    for key, items in by_key.items():
        items.sort(key=lambda item: (item[0], item[1], item[3]))
        state = PartitionState(spec)
        for at, batch in instants(items):
            for item in state.act(at, batch):
                counted[item[2]].append(item[4])
        windows.spans[key] = state.finish()
    return windows, counted


def keep_match(obj: Mapping[str, Any], contexts: Sequence[str], windows: Windows,
               attributes: Sequence[str]) -> bool:
    """Whether a match of a pattern active in `contexts` counts (no contexts: always)."""
    if not contexts:
        return True
    key = match_key(obj, attributes)
    if key is None:
        return False
    first, last = match_span(obj)
    return windows.inside_one(key, contexts, first, last)


def window_mask(frame: pd.DataFrame, ts_column: str, windows: Windows,
                contexts: Sequence[str], attributes: Sequence[str],
                margin: float = 0.0) -> np.ndarray:
    """Rows of `frame` inside a window of one of `contexts` (each widened by `margin` on both
    sides, for negated operands that look outside): the push-down filter (seed 003 Thm 1)."""
    mask = np.zeros(len(frame), dtype=bool)
    if not len(frame):
        return mask
    stamps = frame[ts_column].to_numpy(dtype=np.float64)
    groups = ([((), np.arange(len(frame)))] if not attributes else
              [(k if isinstance(k, tuple) else (k,), idx) for k, idx in
               frame.groupby(list(attributes), sort=False).indices.items()])
    for key, rows in groups:
        key = tuple(v.item() if isinstance(v, np.generic) else v for v in key)
        spans = merge_spans([(s - margin, e + margin) for s, e in windows.holdings(key, contexts)])
        if not spans:
            continue
        starts = np.array([s for s, _ in spans])
        ends = np.array([e for _, e in spans])
        at = np.searchsorted(starts, stamps[rows], side="left") - 1
        ok = at >= 0
        ok[ok] &= stamps[rows][ok] <= ends[at[ok]]
        mask[rows] = ok
    return mask


def covered_time(windows: Windows, keys: Sequence[tuple], contexts: Sequence[str],
                 low: float, high: float) -> float:
    """Total time, summed over `keys`, that some window of `contexts` holds in [low, high]."""
    total = 0.0
    for key in keys:
        for start, end in windows.holdings(key, contexts):
            total += max(0.0, min(end, high) - max(start, low))
    return total
