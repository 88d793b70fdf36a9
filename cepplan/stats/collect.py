"""The statistics of `stats.json` (format `cepplan.stats/1`, see docs/stats.md) from what an
engine's pass over the events gives (`scan.EventScan`: Spark or in-process); every figure is
derived here, in NumPy, the same way for both engines:

1. rows per (reject reason, type, time step): rows read and rejected by reason; the count
   histogram (Poisson dispersion, Bernoulli p), order-m occupancy transitions (Markov chain,
   seed 002 §4.2) and counts per block of time (batch-means rate interval);
2. counts per key and per region (seed 002 §5.2), and a sample of whole time blocks for the
   predicates (seed 004 §2 selectivities), put in one canonical order so that both engines
   draw the same candidate tuples.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

import cepplan
from cepplan.errors import InputError
from cepplan.sources.local_source import REJECT, REJECT_TYPE_UNKNOWN
from cepplan.stats.block_sample import block_index, fraction_of, in_blocks, threshold
from cepplan.stats.distributions import T_975_29
from cepplan.stats.keyed import keyed_patterns, keyed_section
from cepplan.stats.model_choice import choose_model
from cepplan.stats.rejected_rows import rejection_advice
from cepplan.stats.row_estimate import estimate_type_counts
from cepplan.stats.scan import COUNT, STEP, EventScan, SampleBlocks, StepCounts
from cepplan.stats.selectivity import estimate_pattern
from cepplan.stats.step_counts import (
    OrderedSteps,
    StepArrays,
    ordered_block_counts,
    ordered_histogram,
    ordered_transition_counts,
)
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, merged_attribute_types
from cepplan.workload.expr.ast import Attr, KleeneRef, walk
from cepplan.workload.model import Pattern, Workload
from cepplan.workload.source_spec import attribute_types

FORMAT = "cepplan.stats/1"
RATE_BLOCKS = 30  # batch means over this many blocks of the observed span
T_QUANTILE = T_975_29  # of the intervals over RATE_BLOCKS blocks: t, RATE_BLOCKS - 1 df
MIN_BLOCKS = 50  # sample blocks are shortened so that the observed span holds this many
PRESAMPLE_MARGIN = 1.25  # blocks gathered during the scan: this many times the expected need


def check_options(where: str, time_step: float, markov_order: int) -> None:
    """Reject options no engine can use, before any engine starts."""
    if not time_step > 0:
        raise InputError.single(where, "--time-step", f"must be positive, got {time_step}")
    if not 1 <= markov_order <= 8:
        raise InputError.single(where, "--markov-order", f"must be 1..8, got {markov_order}")


def scan_columns(workload: Workload) -> tuple[list[str], list[str]]:
    """What an engine must keep: (all key / attribute columns the statistics read, the
    columns rows are counted by)."""
    group = group_columns(workload)
    return list(dict.fromkeys([*group, *_pattern_columns(workload.patterns, workload)])), group


def collect_statistics(scan: EventScan, paths: Sequence[str], workload: Workload, *,
                       time_step: float = 1.0, markov_order: int = 1, sample: int = 100_000,
                       seed: int = 0, max_groups: int = 1000, strict: bool = False,
                       on_stage: Callable[[str], None] | None = None,
                       per_key: bool = True) -> dict[str, Any]:
    """Measure `paths` through `scan` for `workload` and return the stats document; bad input
    (no usable rows, any rejected row with `strict`) raises `InputError`. Without `per_key`,
    the counts per key and region and the keyed section are left out (`keys` and `regions`
    empty: a live stream's frequent checks read only rates, models and selectivities; its
    scan then counts by no column)."""
    started = time.perf_counter()
    stage = on_stage or (lambda _name: None)
    where = ", ".join(paths)
    check_options(where, time_step, markov_order)
    stage("rows, rejects and counts per time step")
    # the sample's blocks are fixed before the scan, from estimated counts with a margin, so
    # the engine can gather it in the same pass; they are cut down once the counts are known
    estimated = estimate_type_counts(paths, workload)
    presample = ([] if estimated is None else [
        blocks for _, blocks in sample_plans(workload, estimated, sample=sample, seed=seed,
                                             time_step=time_step, margin=PRESAMPLE_MARGIN)])
    rows, per_type = _row_summary(scan.step_counts(time_step, presample), where, strict,
                                  lambda reasons: rejection_advice(reasons, paths, workload))
    first, last = rows.pop("_first_step"), rows.pop("_last_step")
    t_first, t_last = first * time_step, (last + 1) * time_step
    span = t_last - t_first  # the observed steps: rate = mean count per step / step
    stage("rates and occurrence models")
    types = _types(per_type, t_first, span, time_step)
    occurrence = _occurrence(per_type, first, last, time_step, markov_order)
    del per_type  # the per-step table is not held while the sample is worked on
    stage("keys, regions and selectivity sample")
    plans = sample_plans(workload, rows["types"], sample=sample, seed=seed, time_step=time_step,
                         span=span)
    groups = group_columns(workload) if per_key else []
    counted, collected = pd.DataFrame(columns=[EVENT_TYPE, COUNT]), pd.DataFrame()
    if plans or groups:
        counted, collected = scan.groups_and_sample(
            [blocks for _, blocks in plans], groups,
            _pattern_columns([p for p, _ in plans], workload))
    keys, regions = _groups(counted, workload, span, max_groups) if per_key else ({}, {})
    stage("selectivities")
    parts = _sample_parts(canonical_sample(collected, workload), plans)
    del collected  # held once, in canonical order
    details = _selectivities(parts, workload, span, sample, seed)
    rates = {name: info["rate"] for name, info in types.items()}
    stage("keys of partitioned patterns")
    per_key = (keyed_section(workload, counted, span, parts, (t_first, t_last), rates)
               if per_key else None)
    provenance = {"cepplan": cepplan.__version__, "engine": scan.engine, **scan.versions}
    return {
        "format": FORMAT,
        "workload": {"name": workload.name, "path": workload.path, "digest": workload.digest},
        "time_unit": workload.time_unit,
        "input": {"paths": list(paths), "format": workload.source.format},
        "rows": {k: v for k, v in rows.items() if k != "types"},
        "observed": {"start": t_first, "end": t_last, "span": span},
        "rates": rates,
        "models": {name: occ["choice"]["entry"] for name, occ in occurrence.items()},
        "selectivities": {p: {text: d["value"] for text, d in entries.items()
                              if d["value"] is not None}
                          for p, entries in details.items()},
        "types": types,
        "occurrence": occurrence,
        "selectivity_details": details,
        "keys": keys,
        "regions": regions,
        **({"keyed": per_key} if per_key else {}),
        "parameters": {"time_step": time_step, "markov_order": markov_order, "sample": sample,
                       "seed": seed, "max_groups": max_groups, "rate_blocks": RATE_BLOCKS},
        "provenance": {**provenance, "seconds": round(time.perf_counter() - started, 3)},
    }


def canonical_sample(collected: pd.DataFrame, workload: Workload) -> pd.DataFrame:
    """The sampled events with each attribute in its workload type's dtype (the type names
    as a categorical: compared and copied as small codes), in an order that
    does not depend on how an engine numbered or returned the rows (ids differ between engines
    for several files): by time, type, then a hash of the other values; ids are renumbered in
    that order, so both engines draw the same tuples."""
    if collected.empty:
        return collected
    kinds = merged_attribute_types(attribute_types(workload).values())
    dtypes = {"double": "float64", "long": "Int64", "bool": "boolean", "string": object}
    raw_codes, raw_names = pd.factorize(collected[EVENT_TYPE])  # each name made text once
    by_name, names = pd.factorize(np.asarray(raw_names.astype(str), dtype=object))
    others = sorted(c for c in collected.columns if c not in (EVENT_TS, EVENT_TYPE, EVENT_ID))
    columns = {EVENT_TS: collected[EVENT_TS].to_numpy(dtype=np.float64),
               EVENT_TYPE: pd.Categorical.from_codes(by_name[raw_codes], categories=names),
               EVENT_ID: collected[EVENT_ID].to_numpy(dtype=np.int64),
               **{c: _values(collected[c].astype(dtypes[kinds[c]], copy=False) if c in kinds
                             else collected[c]) for c in others}}
    order = _canonical_order(columns, others)
    if (order[1:] < order[:-1]).any():  # each column taken once, only when out of order
        columns = {name: values.take(order) for name, values in columns.items()}
    columns[EVENT_ID] = np.arange(len(order), dtype=np.int64)
    return pd.DataFrame(columns, copy=False)


def _values(series: pd.Series) -> Any:
    """A column's values: its extension array (nullable dtypes) or NumPy array."""
    return series.array if isinstance(series.dtype, pd.api.extensions.ExtensionDtype) \
        else series.to_numpy()


def _canonical_order(columns: dict[str, Any], others: list[str]) -> np.ndarray:
    """The row order by time, type, a hash of the `others` values, then id. With every
    time distinct (usual for a fine clock) the order by time alone is that order, so the
    rest is computed only when two rows share a time."""
    times = columns[EVENT_TS]
    by_time = np.argsort(times, kind="stable")
    ordered = times[by_time]
    if not (ordered[1:] == ordered[:-1]).any():
        return by_time
    content = (pd.util.hash_pandas_object(pd.DataFrame({c: columns[c] for c in others}),
                                          index=False).to_numpy() if others
               else np.zeros(len(times), dtype=np.uint64))
    type_rank = pd.factorize(np.asarray(columns[EVENT_TYPE], dtype=object), sort=True)[0]
    return np.lexsort((columns[EVENT_ID], content, type_rank, times))


def _row_summary(counted: pd.DataFrame | StepCounts, where: str, strict: bool,
                 advice: Callable[[dict[str, int]], str]
                 ) -> tuple[dict[str, Any], dict[str, OrderedSteps]]:
    """Rows read, rejected by reason (unknown type names listed), and per valid type its
    occupied time steps and their event counts; `InputError` with `advice` (what to fix, for
    the reasons) when no row is usable, or any is rejected with `strict`."""
    if isinstance(counted, pd.DataFrame):
        counted = _cut_by_type(counted)
    bad, per_type = counted.rejected, counted.per_type
    read = int(bad[COUNT].sum()) + sum(s.events for s in per_type.values())
    if read == 0:
        raise InputError.single(where, "", "the input has no rows")
    reasons = {str(k): int(v) for k, v in bad.groupby(REJECT, observed=True)[COUNT].sum()
               .items()}
    unknown_rows = bad[bad[REJECT] == REJECT_TYPE_UNKNOWN]
    unknown = {str(k): int(v) for k, v in unknown_rows.groupby(EVENT_TYPE, observed=True)
               [COUNT].sum().sort_values(ascending=False).items()}
    rejected = sum(reasons.values())
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
    if unknown:
        summary += f" (unknown types: {', '.join(list(unknown)[:10])})"
    if not per_type:
        raise InputError.single(where, "", f"no usable rows: all {read} rows rejected "
                                f"({summary}){advice(reasons)}")
    if strict and rejected:
        raise InputError.single(where, "", f"{rejected} of {read} rows rejected ({summary})"
                                f"{advice(reasons)}; run without --strict to count and skip "
                                "them")
    rows = {"read": read, "valid": read - rejected, "rejected": rejected,
            "reasons": reasons, "unknown_types": dict(list(unknown.items())[:20]),
            "types": {name: steps.events for name, steps in per_type.items()},
            "_first_step": min(steps.first for steps in per_type.values()),
            "_last_step": max(steps.last for steps in per_type.values())}
    return rows, per_type


def _cut_by_type(grouped: pd.DataFrame) -> StepCounts:
    """The whole per-step table (an engine's aggregation) as `StepCounts`."""
    rejected_rows = grouped[REJECT].notna().to_numpy()
    valid = _positions(~rejected_rows)
    per_type = _steps_per_type(grouped[EVENT_TYPE].array[valid],
                               _integers(grouped[STEP].array[valid].to_numpy()),
                               _integers(grouped[COUNT].to_numpy()[valid]))
    return StepCounts(grouped.loc[rejected_rows, [REJECT, EVENT_TYPE, COUNT]], per_type)


def _positions(mask: np.ndarray) -> slice | np.ndarray:
    """The rows of `mask`: a slice when they are consecutive (indexing it copies nothing)."""
    count = int(mask.sum())
    first = int(mask.argmax()) if count else 0
    if mask[first:first + count].all():
        return slice(first, first + count)
    return np.flatnonzero(mask)


def _integers(values: np.ndarray) -> np.ndarray:
    """Whole numbers as they are when their type is an integer one (no copy), else int64."""
    return values if values.dtype.kind in "iu" else values.astype(np.int64)


def _steps_per_type(types: ArrayLike, steps: np.ndarray,
                    counts: np.ndarray) -> dict[str, OrderedSteps]:
    """Per type name (in name order), its occupied steps in order and their counts."""
    codes, names = _name_codes(types)
    order = _order_by_type_and_step(codes, len(names), steps)
    if order is not None:
        codes, steps, counts = codes[order], steps[order], counts[order]
    bounds = np.searchsorted(codes, np.arange(len(names) + 1))
    return {name: StepArrays(steps[low:high], counts[low:high])
            for name, low, high in zip(names, bounds[:-1], bounds[1:], strict=True)
            if high > low}


def _name_codes(types: ArrayLike) -> tuple[np.ndarray, list[str]]:
    """Each row's type as a code into the type names present (as text) in name order; a
    categorical by its codes (kept as they are when its categories are those names)."""
    if isinstance(types, pd.Categorical):
        codes, uniques = types.codes, list(types.categories)
        present = np.zeros(len(uniques), dtype=bool)
        present[np.unique(codes)] = True  # sorts the small codes: no int64 copy
    else:
        codes, uniques = pd.factorize(np.asarray(types))
        present = np.ones(len(uniques), dtype=bool)
    names = [str(name) for name in uniques]
    by_name = sorted(np.flatnonzero(present), key=names.__getitem__)
    if list(by_name) == list(range(len(names))):
        return codes, names
    rank = np.full(len(names), -1, dtype=np.min_scalar_type(-len(names) - 1))
    rank[by_name] = np.arange(len(by_name))
    return rank[codes], [names[i] for i in by_name]


def _order_by_type_and_step(codes: np.ndarray, types: int,
                            steps: np.ndarray) -> np.ndarray | None:
    """`np.lexsort((steps, codes))`, or None when the rows are in that order already (as the
    in-process engine gives them); when each (type, step) occurs once (as the engines'
    aggregations give) and the steps are dense, by placing each row in its slot instead."""
    if not len(steps):
        return None
    if ((codes[1:] > codes[:-1]) | ((codes[1:] == codes[:-1]) & (steps[1:] > steps[:-1]))).all():
        return None
    low, width = int(steps.min()), int(steps.max()) - int(steps.min()) + 1
    if types * width <= 4 * len(steps) + 1_000_000 and len(steps) < 2 ** 31:
        slot = np.full(types * width, -1, dtype=np.int32)  # half the memory of int64
        slot[codes.astype(np.int64) * width + (steps.astype(np.int64) - low)] = np.arange(
            len(steps), dtype=np.int32)
        order = slot[slot >= 0].astype(np.int64)
        if len(order) == len(steps):  # no (type, step) twice
            return order
    return np.lexsort((steps, codes))


def _types(per_type: dict[str, OrderedSteps], t_first: float, span: float,
           time_step: float) -> dict[str, dict[str, Any]]:
    """Rate = count / observed span (the steps from the first to the last occupied one), with a
    batch-means 95 % interval: the span is cut into
    `RATE_BLOCKS` blocks and the t interval of the mean block count is scaled (robust to
    overdispersion and short-range dependence, unlike a Poisson interval)."""
    block_length = span / RATE_BLOCKS
    out = {}
    for name, steps in per_type.items():
        blocks = ordered_block_counts(steps, time_step, t_first, block_length, RATE_BLOCKS)
        per_block = blocks / block_length
        half = T_QUANTILE * per_block.std(ddof=1) / math.sqrt(RATE_BLOCKS)
        n = steps.events
        rate = n / span
        out[name] = {"count": n, "rate": rate,
                     "rate_ci95": [max(0.0, float(rate - half)), float(rate + half)],
                     "rate_ci_method": f"batch means over {RATE_BLOCKS} blocks"}
    return out


def _occurrence(per_type: dict[str, OrderedSteps], first: int, last: int, time_step: float,
                order: int) -> dict[str, dict[str, Any]]:
    """Per type: count histogram and order-m transition counts, then the model choice."""
    out = {}
    for name, steps in per_type.items():
        transitions = ordered_transition_counts(steps, first, last, order)
        out[name] = choose_model(last - first + 1, ordered_histogram(steps), transitions,
                                 time_step)
    return out


def group_columns(workload: Workload) -> list[str]:
    """Key columns, region attributes and the attributes patterns partition by: the columns
    counts are reported by (the last for the keyed section)."""
    names = list(workload.source.key_columns)
    names += [t.region for t in workload.event_types.values() if t.region]
    names += [c for p in keyed_patterns(workload) for c in p.partition_by]
    return list(dict.fromkeys(names))


def _groups(counted: pd.DataFrame, workload: Workload, span: float,
            max_groups: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per key and per region counts and rates (the `max_groups` largest per type), summed
    from the counts per (type, key and region columns)."""
    keys: dict[str, Any] = {}
    key_columns = tuple(workload.source.key_columns)
    if key_columns:
        keys = {"columns": list(key_columns),
                **_group_rates(counted, key_columns, span, max_groups)}
    regions: dict[str, Any] = {}
    for name, event_type in workload.event_types.items():
        if event_type.region:
            grouped = _group_rates(counted[counted[EVENT_TYPE] == name],
                                   (event_type.region,), span, max_groups)
            regions[name] = {"attribute": event_type.region,
                             "rates": grouped["rates"].get(name, []),
                             "groups": grouped["groups"].get(name, 0)}
    return keys, regions


def _group_rates(counted: pd.DataFrame, columns: tuple[str, ...], span: float,
                 max_groups: int) -> dict[str, Any]:
    rates: dict[str, list] = {}
    groups: dict[str, int] = {}
    counted = counted.groupby([EVENT_TYPE, *columns], as_index=False)[COUNT].sum()
    for name, part in counted.groupby(EVENT_TYPE):
        top = part.sort_values(COUNT, ascending=False, kind="stable").head(max_groups)
        rates[str(name)] = [{"key": {c: _plain(r[c]) for c in columns}, "count": int(r[COUNT]),
                             "rate": int(r[COUNT]) / span} for _, r in top.iterrows()]
        groups[str(name)] = len(part)
    return {"rates": rates, "groups": groups}


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value JSON wants."""
    return value.item() if hasattr(value, "item") else value


def sample_plans(workload: Workload, counts: dict[str, float], *, sample: int, seed: int,
                 time_step: float, span: float | None = None,
                 margin: float = 1.0) -> list[tuple[Pattern, SampleBlocks]]:
    """Per pattern with predicates or a partition key: its primitive types, blocks of 20
    windows (one time step
    without a window; at most span / `MIN_BLOCKS` when `span` is known) and the fraction of
    blocks kept, `margin` * `sample` / its types' events (`counts`): about `sample` events
    expected, all blocks when they hold fewer."""
    plans = []
    for pattern in workload.patterns:
        types = sorted({o.event_type for o in pattern.operands if not o.is_complex})
        if not (pattern.predicates or pattern.partition_by) or not types:
            continue
        length = 20 * pattern.window if pattern.window else time_step
        if span is not None:
            length = min(length, span / MIN_BLOCKS)
        available = sum(counts.get(t, 0) for t in types)
        fraction = margin * sample / available if available else 1.0
        plans.append((pattern, SampleBlocks(tuple(types), length, threshold(fraction), seed)))
    return plans


def _sample_parts(collected: pd.DataFrame, plans: list[tuple[Pattern, SampleBlocks]]
                  ) -> dict[str, tuple[pd.DataFrame, SampleBlocks]]:
    """Each sampled pattern's own part of the collected sample, with its blocks."""
    out = {}
    for pattern, blocks in plans:
        mask = (in_blocks(collected[EVENT_TYPE], collected[EVENT_TS].to_numpy(),
                          [blocks]) if len(collected) else np.zeros(0, dtype=bool))
        out[pattern.name] = (collected[mask], blocks)
    return out


def _selectivities(parts: dict[str, tuple[pd.DataFrame, SampleBlocks]], workload: Workload,
                   span: float, sample: int, seed: int) -> dict[str, dict[str, Any]]:
    """Estimate each pattern's predicates on its own part of the collected sample."""
    out = {}
    for index, name in enumerate(parts):
        pattern = workload.pattern(name)
        part, blocks = parts[name]
        if not pattern.predicates:
            continue
        if blocks.threshold is None:
            method_note = f"all {len(part)} events"
        else:
            kept = (len(np.unique(block_index(part[EVENT_TS].to_numpy(), blocks.length)))
                    if len(part) else 0)
            method_note = (f"{len(part)} events in {kept} of {math.ceil(span / blocks.length)} "
                           f"blocks of {blocks.length:g} {workload.time_unit} (each kept with "
                           f"probability {fraction_of(blocks.threshold):.4g})")
        estimates = estimate_pattern(pattern, part, seq_ties=workload.options.seq_ties,
                                     budget=sample, seed=seed + index)
        for entry in estimates.values():
            if entry["value"] is not None:
                entry["sample"] = method_note
        out[pattern.name] = estimates
    return out


def _pattern_columns(patterns: Sequence[Pattern], workload: Workload) -> list[str]:
    """Partition and predicate attribute columns of `patterns` (`ts` is `__ts`; attributes of
    complex subevents are no columns)."""
    available = {*workload.source.key_columns,
                 *merged_attribute_types(attribute_types(workload).values())}
    names: list[str] = []
    for pattern in patterns:
        names += list(pattern.partition_by)
        for predicate in pattern.predicates:
            for node in walk(predicate.expr):
                ref = node.ref if isinstance(node, KleeneRef) else node
                if isinstance(ref, Attr) and ref.attr != "ts":
                    names.append(ref.attr)
    return [n for n in dict.fromkeys(names) if n in available]
