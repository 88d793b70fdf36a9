"""The context stage inside the in-process engine (docs/contexts.md, "The engine stage"): the
runtime's context functions applied to the tagged rows — deriving patterns first, every other
pattern's rows pushed down to its windows before acquisition, its matches kept when they lie
in one holding — and the figures of metrics.json's `contexts`, gathered while reading."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.context_windows import ContextSpec
from cepplan.engine_adapter.runtime.contexts import (
    Derived,
    contexts_metrics,
    counting_mask,
    derive_contexts,
    has_contexts,
    partition_keys,
    pattern_metrics,
    pushed_down,
)
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE


class LocalContexts:
    """One run's context stage: `observe` every batch read, `derive` once the rows are
    tagged, then per pattern `push_down`, `counted` per evaluated range and `done`."""

    def __init__(self, job: Job):
        self.job = job
        self.spec = ContextSpec.from_json(job.data["contexts"])
        self.type_rows: Counter = Counter()  # rows per event type, complex ones that count too
        self.keys: dict[tuple, None] = {}
        self.low, self.high = math.inf, -math.inf
        self.derived: Derived | None = None
        self.patterns: dict[str, dict[str, Any]] = {}
        self._seen: dict[str, int] = {}

    @classmethod
    def of(cls, job: Job) -> LocalContexts | None:
        return cls(job) if has_contexts(job) else None

    def observe(self, events: pd.DataFrame) -> None:
        """A batch's rows per type, time span and context partitions (for the metrics)."""
        if not len(events):
            return
        self.type_rows.update(events[EVENT_TYPE].astype(str).value_counts().to_dict())
        stamps = events[EVENT_TS]
        self.low, self.high = min(self.low, stamps.min()), max(self.high, stamps.max())
        self.keys.update(dict.fromkeys(partition_keys(events, self.spec.partition_by)))

    def derive(self, pool: pd.DataFrame) -> Derived:
        """The windows and the deriving patterns' counted matches, evaluated first."""
        self.derived = derive_contexts(pool, self.job, self.spec)
        for name in self.derived.matches:
            self._seen[name] = self.derived.seen.get(name, self._rows_of_types(name))
            self._record(name)
        for frame in self.derived.complex_frames:
            self.type_rows.update(frame[EVENT_TYPE].astype(str).value_counts().to_dict())
        return self.derived

    def push_down(self, pool: pd.DataFrame, masks: dict[str, np.ndarray], spec: PatternSpec
                  ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
        """The rows tagged for `spec` that lie inside its windows, and its tags over them."""
        rows = np.flatnonzero(np.logical_or.reduce(list(masks.values())))
        rows = rows[pushed_down(pool.iloc[rows], spec, self.spec, self.derived.windows)]
        self._seen[spec.name] = len(rows)
        return pool.iloc[rows], {label: mask[rows] for label, mask in masks.items()}

    def counted(self, result: PartitionOutput, spec: PatternSpec) -> PartitionOutput:
        """The matches of one evaluated range that count (inside one holding of a context of
        the pattern), with their complex events."""
        contexts = self.spec.contexts_of(spec.name)
        if not contexts or not result.count:
            return result
        texts = result.texts()
        keep = counting_mask(texts, contexts, self.derived.windows, self.spec)
        lines = "".join(text + "\n" for text, kept in zip(texts, keep, strict=True) if kept)
        made = result.complex[keep] if result.complex is not None else None
        return PartitionOutput(lines, int(keep.sum()), made, result.cap_hits,
                               held_back=result.held_back)

    def done(self, spec: PatternSpec, made: int) -> None:
        """A pattern evaluated: its metrics; its `made` counted complex events join the rows
        of its type."""
        self._record(spec.name)
        self.type_rows[spec.name] += made

    def seen(self, name: str) -> int:
        """The rows a pattern was evaluated over (after push-down)."""
        return self._seen[name]

    def section(self, matches: dict[str, int]) -> dict[str, Any]:
        """metrics.json's `contexts`."""
        return contexts_metrics(self.derived.windows, self.patterns, matches, self.job)

    def _rows_of_types(self, name: str) -> int:
        return sum(self.type_rows[t] for t in {o.type for o in self.job.pattern(name).operands})

    def _record(self, name: str) -> None:
        span = (float(self.low), float(self.high)) if self.low <= self.high else (0.0, 0.0)
        self.patterns[name] = pattern_metrics(
            self._rows_of_types(name), self._seen[name], self.spec.contexts_of(name),
            self.derived.windows, list(self.keys), span)
