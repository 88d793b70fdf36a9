"""The statistics job: read event files through the workload's `source`, measure, and return the
`stats.json` document (format `cepplan.stats/1`, see docs/stats.md).

Spark does the scans and aggregations; the driver fits models and evaluates predicates on small
collected tables. The parsed rows are cached once, then:

1. rows read and rejected by reason, per type count and time range (one aggregation);
2. counts per (type, time step) — cached — giving the count histogram (Poisson dispersion,
   Bernoulli p), order-m occupancy transitions (Markov chain, seed 002 §4.2) and counts per
   block of time (batch-means confidence interval of the rate);
3. per key and per region counts (seed 002 §5.2) where the workload has keys or regions;
4. one collected sample of whole time blocks for the predicates (seed 004 §2 selectivities).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from scipy import stats as sps

import cepplan
from cepplan.errors import InputError
from cepplan.stats.model_choice import choose_model
from cepplan.stats.selectivity import estimate_pattern
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.ast import Attr, KleeneRef, walk
from cepplan.workload.model import Pattern, Workload
from cepplan.workload.source_spec import reader_arguments
from cepplan.workload.spark_source import REJECT, REJECT_TYPE_UNKNOWN, SourceError, read_events

FORMAT = "cepplan.stats/1"
RATE_BLOCKS = 30  # batch means over this many blocks of the observed span


def collect_statistics(spark: SparkSession, paths: Sequence[str], workload: Workload, *,
                       time_step: float = 1.0, markov_order: int = 1, sample: int = 200_000,
                       seed: int = 0, max_groups: int = 1000, strict: bool = False,
                       on_stage: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure `paths` for `workload` and return the stats document; bad input (missing files
    or columns, no usable rows, any rejected row with `strict`) raises `InputError`."""
    started = time.perf_counter()
    stage = on_stage or (lambda _name: None)
    where = ", ".join(paths)
    if not time_step > 0:
        raise InputError.single(where, "--time-step", f"must be positive, got {time_step}")
    if not 1 <= markov_order <= 8:
        raise InputError.single(where, "--markov-order", f"must be 1..8, got {markov_order}")
    stage("read and parse")
    try:
        events = read_events(spark, list(paths), **reader_arguments(workload),
                             positions="monotonic")
    except SourceError as err:
        raise InputError.single(where, "", str(err)) from None
    events = events.select(EVENT_TYPE, EVENT_TS, EVENT_ID, REJECT,
                           *_needed_columns(workload, events.columns)).persist()
    try:
        stage("rows, rejects and rates")
        rows = _row_summary(events, where, strict)
        valid = events.filter(F.col(REJECT).isNull())
        t_first, t_last = rows.pop("_t_first"), rows.pop("_t_last")
        span = max(t_last - t_first, time_step)
        stage("counts per time step")
        per_step = _per_step(valid, time_step).persist()
        try:
            types = _types(per_step, rows["types"], t_first, span, time_step)
            stage("occurrence models")
            occurrence = _occurrence(per_step, rows["types"], t_first, t_last, time_step,
                                     markov_order)
        finally:
            per_step.unpersist()
        stage("keys and regions")
        keys, regions = _groups(valid, workload, span, max_groups)
        stage("selectivity sample")
        details = _selectivities(valid, workload, rows["types"], t_first, span, sample, seed,
                                 stage)
    finally:
        events.unpersist()
    rates = {name: info["rate"] for name, info in types.items()}
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
        "parameters": {"time_step": time_step, "markov_order": markov_order, "sample": sample,
                       "seed": seed, "max_groups": max_groups, "rate_blocks": RATE_BLOCKS},
        "provenance": {"cepplan": cepplan.__version__, "spark": spark.version,
                       "seconds": round(time.perf_counter() - started, 3)},
    }


def _needed_columns(workload: Workload, available: Sequence[str]) -> list[str]:
    """Key, region, partition and predicate attribute columns (nothing else is cached)."""
    names = list(workload.source.key_columns)
    names += [t.region for t in workload.event_types.values() if t.region]
    return [n for n in dict.fromkeys(names) if n in available] + [
        n for n in _pattern_columns(workload.patterns, available) if n not in names]


def _row_summary(events: DataFrame, where: str, strict: bool) -> dict[str, Any]:
    """Rows read, rejected by reason (unknown type names listed), per type count and range."""
    grouped = (events.groupBy(REJECT, EVENT_TYPE)
               .agg(F.count(F.lit(1)).alias("n"), F.min(EVENT_TS).alias("t0"),
                    F.max(EVENT_TS).alias("t1")).collect())
    read = sum(r["n"] for r in grouped)
    if read == 0:
        raise InputError.single(where, "", "the input has no rows")
    reasons: dict[str, int] = {}
    unknown: dict[str, int] = {}
    types: dict[str, int] = {}
    t0, t1 = math.inf, -math.inf
    for r in grouped:
        if r[REJECT] is None:
            types[r[EVENT_TYPE]] = r["n"]
            t0, t1 = min(t0, r["t0"]), max(t1, r["t1"])
            continue
        reasons[r[REJECT]] = reasons.get(r[REJECT], 0) + r["n"]
        if r[REJECT] == REJECT_TYPE_UNKNOWN:
            unknown[str(r[EVENT_TYPE])] = r["n"]
    rejected = sum(reasons.values())
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
    if unknown:
        names = sorted(unknown, key=lambda k: -unknown[k])[:10]
        summary += f" (unknown types: {', '.join(names)})"
    if not types:
        raise InputError.single(where, "", f"no usable rows: all {read} rows rejected "
                                f"({summary})")
    if strict and rejected:
        raise InputError.single(where, "", f"{rejected} of {read} rows rejected ({summary}); "
                                "run without --strict to count and skip them")
    unknown_top = dict(sorted(unknown.items(), key=lambda kv: -kv[1])[:20])
    return {"read": read, "valid": read - rejected, "rejected": rejected,
            "reasons": reasons, "unknown_types": unknown_top, "types": types,
            "_t_first": float(t0), "_t_last": float(t1)}


def _per_step(valid: DataFrame, time_step: float) -> DataFrame:
    step = F.floor(F.col(EVENT_TS) / F.lit(time_step)).cast("long")
    return valid.groupBy(F.col(EVENT_TYPE).alias("type"), step.alias("step")).count()


def _types(per_step: DataFrame, counts: dict[str, int], t_first: float, span: float,
           time_step: float) -> dict[str, dict[str, Any]]:
    """Rate = count / observed span, with a batch-means 95 % interval: the span is cut into
    `RATE_BLOCKS` blocks and the t interval of the mean block count is scaled (robust to
    overdispersion and short-range dependence, unlike a Poisson interval)."""
    block_length = span / RATE_BLOCKS
    start = F.lit(t_first)
    block = F.floor((F.col("step") * F.lit(time_step) - start) / F.lit(block_length))
    block = F.least(F.greatest(block, F.lit(0)), F.lit(RATE_BLOCKS - 1)).cast("int")
    rows = per_step.groupBy("type", block.alias("block")).agg(F.sum("count").alias("n"))
    blocks = {name: np.zeros(RATE_BLOCKS) for name in counts}
    for r in rows.collect():
        blocks[r["type"]][r["block"]] = r["n"]
    quantile = float(sps.t.ppf(0.975, RATE_BLOCKS - 1))
    out = {}
    for name, n in sorted(counts.items()):
        per_block = blocks[name] / block_length
        half = quantile * per_block.std(ddof=1) / math.sqrt(RATE_BLOCKS)
        rate = n / span
        out[name] = {"count": n, "rate": rate,
                     "rate_ci95": [max(0.0, float(rate - half)), float(rate + half)],
                     "rate_ci_method": f"batch means over {RATE_BLOCKS} blocks"}
    return out


def _occurrence(per_step: DataFrame, counts: dict[str, int], t_first: float, t_last: float,
                time_step: float, order: int) -> dict[str, dict[str, Any]]:
    """Per type: count histogram and order-m transition counts, then the model choice."""
    first = math.floor(t_first / time_step)
    last = math.floor(t_last / time_step)
    steps = last - first + 1
    histogram: dict[str, dict[int, int]] = {name: {} for name in counts}
    for r in per_step.groupBy("type", "count").agg(F.count(F.lit(1)).alias("k")).collect():
        histogram[r["type"]][int(r["count"])] = int(r["k"])
    # Each occupied step s sets bit k of the window ending at step s + k (bit 0 = that step,
    # bit k = k steps before); windows that touch no occupied step are all-zero.
    shift = F.explode(F.sequence(F.lit(0), F.lit(order))).alias("k")
    windows = (per_step.select("type", "step", shift)
               .select("type", (F.col("step") + F.col("k")).alias("t"),
                       F.pow(F.lit(2), F.col("k")).cast("long").alias("bit"))
               .filter((F.col("t") >= first + order) & (F.col("t") <= last))
               .groupBy("type", "t").agg(F.sum("bit").alias("mask"))
               .groupBy("type", "mask").agg(F.count(F.lit(1)).alias("k")))
    transitions = {name: np.zeros((2 ** order, 2)) for name in counts}
    for r in windows.collect():
        mask = int(r["mask"])
        transitions[r["type"]][mask >> 1, mask & 1] += r["k"]
    out = {}
    for name in sorted(counts):
        matrix = transitions[name]
        matrix[0, 0] += max(steps - order, 0) - matrix.sum()
        out[name] = choose_model(steps, histogram[name], matrix, time_step)
    return out


def _groups(valid: DataFrame, workload: Workload, span: float,
            max_groups: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per key and per region counts and rates (the `max_groups` largest per type)."""
    keys: dict[str, Any] = {}
    key_columns = list(workload.source.key_columns)
    if key_columns:
        keys = {"columns": key_columns,
                **_group_rates(valid, key_columns, span, max_groups, None)}
    regions: dict[str, Any] = {}
    for name, event_type in workload.event_types.items():
        if event_type.region:
            grouped = _group_rates(valid, [event_type.region], span, max_groups, name)
            regions[name] = {"attribute": event_type.region,
                             "rates": grouped["rates"].get(name, []),
                             "groups": grouped["groups"].get(name, 0)}
    return keys, regions


def _group_rates(valid: DataFrame, columns: list[str], span: float, max_groups: int,
                 only_type: str | None) -> dict[str, Any]:
    frame = valid if only_type is None else valid.filter(F.col(EVENT_TYPE) == only_type)
    counted = frame.groupBy(EVENT_TYPE, *columns).agg(F.count(F.lit(1)).alias("n"))
    by_type = Window.partitionBy(EVENT_TYPE)
    ranked = (counted.withColumn("rank", F.row_number().over(by_type.orderBy(F.desc("n"))))
              .withColumn("groups", F.count(F.lit(1)).over(by_type))
              .filter(F.col("rank") <= max_groups))
    rates: dict[str, list] = {}
    groups: dict[str, int] = {}
    for r in ranked.orderBy(EVENT_TYPE, "rank").collect():
        rates.setdefault(r[EVENT_TYPE], []).append(
            {"key": {c: r[c] for c in columns}, "count": r["n"], "rate": r["n"] / span})
        groups[r[EVENT_TYPE]] = r["groups"]
    return {"rates": rates, "groups": groups}


def _selectivities(valid: DataFrame, workload: Workload, counts: dict[str, int],
                   t_first: float, span: float, sample: int, seed: int,
                   stage: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """Collect whole time blocks of each pattern's types (at most about `sample` events per
    pattern, blocks chosen at random with `seed`), in one Spark job, then estimate."""
    rng = np.random.default_rng(seed)
    plans = []
    for pattern in workload.patterns:
        types = sorted({o.event_type for o in pattern.operands if not o.is_complex})
        if not pattern.predicates or not types:
            continue
        window = pattern.window or 0.0
        length = max(20 * window, span / 2000)
        n_blocks = max(1, math.ceil(span / length))
        available = sum(counts.get(t, 0) for t in types)
        chosen = None
        if available > sample:
            k = max(1, round(n_blocks * sample / available))
            chosen = sorted(rng.choice(n_blocks, size=min(k, n_blocks), replace=False).tolist())
        plans.append((pattern, types, length, chosen))
    if not plans:
        return {}
    conditions = []
    for _, types, length, chosen in plans:
        condition = F.col(EVENT_TYPE).isin(types)
        if chosen is not None:
            block = F.floor((F.col(EVENT_TS) - F.lit(t_first)) / F.lit(length)).cast("long")
            condition = condition & block.isin(chosen)
        conditions.append(condition)
    wanted = F.lit(False)
    for condition in conditions:
        wanted = wanted | condition
    attributes = _pattern_columns([p for p, *_ in plans], valid.columns)
    columns = [EVENT_TYPE, EVENT_TS, EVENT_ID, *attributes]
    collected = valid.filter(wanted).select(*columns).toPandas()
    stage("selectivities")
    out = {}
    for index, (pattern, types, length, chosen) in enumerate(plans):
        mask = collected[EVENT_TYPE].isin(types)
        if chosen is not None:
            block = np.floor((collected[EVENT_TS] - t_first) / length).astype(np.int64)
            mask &= block.isin(chosen)
        part = collected[mask]
        method_note = (f"{len(part)} events in {len(chosen)} of {math.ceil(span / length)} "
                       f"blocks of {length:g} {workload.time_unit}" if chosen is not None
                       else f"all {len(part)} events")
        estimates = estimate_pattern(pattern, part, seq_ties=workload.options.seq_ties,
                                     budget=sample, seed=seed + index)
        for entry in estimates.values():
            if entry["value"] is not None:
                entry["sample"] = method_note
        out[pattern.name] = estimates
    return out


def _pattern_columns(patterns: Sequence[Pattern], available: Sequence[str]) -> list[str]:
    """Partition and predicate attribute columns of `patterns` (`ts` is `__ts`)."""
    names: list[str] = []
    for pattern in patterns:
        names += list(pattern.partition_by)
        for predicate in pattern.predicates:
            for node in walk(predicate.expr):
                ref = node.ref if isinstance(node, KleeneRef) else node
                if isinstance(ref, Attr) and ref.attr != "ts":
                    names.append(ref.attr)
    return [n for n in dict.fromkeys(names) if n in available]
