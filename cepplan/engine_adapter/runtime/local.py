"""Evaluate a whole job over an in-memory event frame, without Spark (tests, benchmarks).

Patterns run children first; each pattern's matches become events of its type for the
patterns above it (complex subevents, seed 002 §3.2.3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import pandas as pd

from cepplan.engine_adapter.runtime.after_match import kept, skip_rules
from cepplan.engine_adapter.runtime.contexts import has_contexts, run_with_contexts
from cepplan.engine_adapter.runtime.job import Job, evaluate_partition, partitions
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS
from cepplan.engine_adapter.runtime.positions import with_positions
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.engine_adapter.runtime.shared_plan import run_group
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE


@dataclass
class LocalResult:
    """Match objects per pattern, the number of Kleene enumerations cut by the cap and of
    matches held back (a negation the input's time does not decide)."""

    matches: dict[str, list[dict]] = field(default_factory=dict)
    cap_hits: dict[str, int] = field(default_factory=dict)
    held_back: dict[str, int] = field(default_factory=dict)
    partials: dict[int, int] = field(default_factory=dict)  # shared node -> partial matches


def run_local(events: pd.DataFrame, job: Job, *, chunk_events: int = CHUNK_EVENTS,
              share: bool = True) -> LocalResult:
    """All matches of every pattern in `job` over `events` (canonical columns); with `share`,
    the plan's shared subtrees are computed once per partition for their users. The input
    covers the time from its first to its last event (`Job.span`)."""
    if len(events):
        stamps = events[EVENT_TS]
        job = replace(job, span=(float(stamps.min()), float(stamps.max())))
    events = with_positions(events, job.patterns)  # count windows' clock
    if has_contexts(job):  # the context stage: docs/contexts.md
        return run_with_contexts(events, job, chunk_events=chunk_events)
    result = LocalResult()
    sharing = sharing_plan(job) if share else None
    shared: dict[str, list] = {}
    complex_frames: list[pd.DataFrame] = []
    used = {o.type for p in job.patterns for o in p.operands}
    for spec in job.patterns:
        types = {o.type for o in spec.operands}
        pool = pd.concat([events, *complex_frames], ignore_index=True) if complex_frames \
            else events
        frame = pool[pool[EVENT_TYPE].isin(types)]
        found, hits, held, made = [], 0, 0, []
        if sharing is not None and spec.name in sharing.uses:  # the shared plan's groups
            if spec.name not in shared:
                shared.update(run_group(pool, job, sharing, spec.name, with_complex=used,
                                        chunk_events=chunk_events, partials=result.partials))
            outputs = iter(shared.pop(spec.name))
        else:
            outputs = (evaluate_partition(group, job, spec, with_complex=spec.name in used,
                                          chunk_events=chunk_events)
                       for group in partitions(frame, spec.partition_by))
        for out in outputs:
            found += [json.loads(text) for text in out.texts()]
            hits += out.cap_hits
            held += out.held_back
            if out.complex is not None:
                made.append(out.complex)
        result.matches[spec.name] = found
        result.cap_hits[spec.name] = hits
        result.held_back[spec.name] = held
        complex_frames += made
    _skip(result, job)
    return result


def _skip(result: LocalResult, job: Job) -> None:
    """The job's after-match skips applied to `result.matches`, over all core patterns
    written under one name together (as `after_match.skip_in_files` does to a run's files)."""
    for name, rule in skip_rules(job.data).items():
        cores = [s.name for s in job.patterns if s.output_name == name]
        found = [m for core in cores for m in result.matches[core]]
        keep = iter(kept(found, rule))
        for core in cores:
            result.matches[core] = [m for m in result.matches[core] if next(keep)]
