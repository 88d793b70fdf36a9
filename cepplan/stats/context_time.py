"""How long each context holds, measured in-process from events (seed 003 §5.3: the expected
share of time each grouped window holds, which the contexts pass puts into `plan.json`).

The deriving patterns are run by the engine's context stage on the events (the other patterns
are not run); each partition's windows are swept over the observed time span into the time
each set of contexts held together.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from typing import Any

import pandas as pd

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.context_windows import ContextSpec, Windows
from cepplan.engine_adapter.runtime.contexts import derive_lazily, partition_keys
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS
from cepplan.planner.plan import trivial_plan
from cepplan.workload.columns import EVENT_TS
from cepplan.workload.context_model import state_name
from cepplan.workload.model import Workload


def context_time(events: pd.DataFrame, workload: Workload) -> dict[str, Any]:
    """The stats document's `contexts` section: share of partition-time per context set
    (`state_shares`) and per context, window counts and mean durations (time_unit)."""
    job = job_from_json(job_data(workload, trivial_plan(workload)))
    spec = ContextSpec.from_json(job.data["contexts"])
    windows, _, _, _ = derive_lazily(events, job, spec, CHUNK_EVENTS)
    if not len(events):
        return {"state_shares": {}, "context_shares": {}, "windows": {}, "mean_duration": {}}
    low, high = float(events[EVENT_TS].min()), float(events[EVENT_TS].max())
    keys = partition_keys(events, spec.partition_by)
    per_state: dict[str, float] = defaultdict(float)
    lengths: dict[str, list[float]] = defaultdict(list)
    for key in keys:
        for state, length in sweep(windows, key, low, high):
            per_state[state_name(state)] += length
        for context, (starts, ends) in windows.of(key).items():
            lengths[context] += [min(e, high) - max(s, low) for s, e in zip(starts, ends,
                                                                            strict=True)
                                 if min(e, high) > max(s, low)]
    total = len(keys) * (high - low)
    contexts = sorted(lengths)
    return {
        "state_shares": {k: round(v / total, 6) for k, v in sorted(per_state.items())}
        if total > 0 else {},
        "context_shares": {c: round(sum(lengths[c]) / total, 6) for c in contexts}
        if total > 0 else {},
        "windows": {c: len(lengths[c]) for c in contexts},
        "mean_duration": {c: round(sum(lengths[c]) / len(lengths[c]), 6) for c in contexts
                          if lengths[c]},
        "partitions": len(keys), "span": [low, high],
    }


def sweep(windows: Windows, key: tuple, low: float, high: float):
    """(set of contexts holding, time it held) for each stretch of [low, high] in one key."""
    bounds = {low, high}
    spans = [(c, s, e) for c, (starts, ends) in windows.of(key).items()
             for s, e in zip(starts, ends, strict=True)]
    bounds.update(b for _, s, e in spans for b in (s, e) if low < b < high)
    ordered = sorted(bounds)
    for left, right in pairwise(ordered):
        state = frozenset(c for c, s, e in spans if s <= left and right <= e)
        yield state, right - left



def measure_contexts(spark: Any, paths: list[str], workload: Workload) -> dict[str, Any]:
    """`context_time` of event files, read with Spark when `spark` is given (only the deriving
    patterns' event types and attributes reach the driver), else in-process."""
    if spark is None:
        return _measure_contexts_local(paths, workload)
    from pyspark.sql import functions as F

    from cepplan.workload.columns import EVENT_ID, EVENT_TYPE
    from cepplan.workload.source_spec import reader_arguments
    from cepplan.workload.spark_source import read_events, valid_rows

    deriving = {t.on for t in workload.contexts.transitions}
    types = {o.event_type for name in deriving for o in workload.pattern(name).operands}
    columns = [EVENT_TYPE, EVENT_TS, EVENT_ID]
    columns += list(dict.fromkeys(a for t in types if t in workload.event_types
                                  for a in workload.event_types[t].attributes))
    events = valid_rows(read_events(spark, list(paths), **reader_arguments(workload),
                                    positions="monotonic"))
    chosen = events.filter(F.col(EVENT_TYPE).isin(sorted(types)))
    return context_time(chosen.select(*[c for c in columns if c in events.columns]).toPandas(),
                        workload)


def _measure_contexts_local(paths: list[str], workload: Workload) -> dict[str, Any]:
    """`context_time` of event files read in-process, batch by batch, keeping only the valid
    rows of the deriving patterns' event types."""
    import pandas as pd

    from cepplan.sources.local_source import REJECT, read_batches
    from cepplan.workload.columns import EVENT_TYPE
    from cepplan.workload.source_spec import reader_arguments

    deriving = {t.on for t in workload.contexts.transitions}
    types = {o.event_type for name in deriving for o in workload.pattern(name).operands}
    kept = [batch[batch[REJECT].isna() & batch[EVENT_TYPE].isin(sorted(types))]
            for batch in read_batches(paths, **reader_arguments(workload))]
    frame = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
    return context_time(frame.drop(columns=[REJECT]), workload)
