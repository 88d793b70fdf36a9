"""Evaluate a whole job over an in-memory event frame, without Spark (tests, benchmarks).

Patterns run children first; each pattern's matches become events of its type for the
patterns above it (complex subevents, seed 002 §3.2.3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from cepplan.engine_adapter.runtime.contexts import has_contexts, run_with_contexts
from cepplan.engine_adapter.runtime.job import Job, evaluate_partition, partitions
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS
from cepplan.workload.columns import EVENT_TYPE


@dataclass
class LocalResult:
    """Match objects per pattern and the number of Kleene enumerations cut by the cap."""

    matches: dict[str, list[dict]] = field(default_factory=dict)
    cap_hits: dict[str, int] = field(default_factory=dict)


def run_local(events: pd.DataFrame, job: Job, *, chunk_events: int = CHUNK_EVENTS) -> LocalResult:
    """All matches of every pattern in `job` over `events` (canonical columns)."""
    if has_contexts(job):  # the context stage: docs/contexts.md
        return run_with_contexts(events, job, chunk_events=chunk_events)
    result = LocalResult()
    complex_frames: list[pd.DataFrame] = []
    used = {o.type for p in job.patterns for o in p.operands}
    for spec in job.patterns:
        types = {o.type for o in spec.operands}
        pool = pd.concat([events, *complex_frames], ignore_index=True) if complex_frames \
            else events
        frame = pool[pool[EVENT_TYPE].isin(types)]
        found, hits, made = [], 0, []
        for group in partitions(frame, spec.partition_by):
            out = evaluate_partition(group, job, spec, with_complex=spec.name in used,
                                     chunk_events=chunk_events)
            found += [json.loads(text) for text in out.texts()]
            hits += out.cap_hits
            if out.complex is not None:
                made.append(out.complex)
        result.matches[spec.name] = found
        result.cap_hits[spec.name] = hits
        complex_frames += made
    return result
