"""Acquisition (seed 002 §3.3) for all patterns of a level in shared stages.

Shipped in the job's runtime zip. An event keeps the tag of a step-k variable only when, for
every positive variable of steps 1 … k−1 of that pattern, a kept event of it (same key) lies
within the window on the side the SEQ order allows (inclusive bounds). Tags of step 1 are
kept as tagged. Round k serves step k+1 of every pattern at once:

1. one aggregation summarises the kept events of every anchor variable per (key, time bucket
   of the pattern's window): the earliest and latest timestamp in the bucket, and the latest
   of the bucket before / earliest of the bucket after (anchors are spread into the three
   buckets they can serve);
2. each event carrying a tag to test looks its bucket up in that summary (one left join per
   anchor variable on a unique key: no row is duplicated, the summary is small enough to be
   broadcast by adaptive execution) and drops the tags whose test fails.

Why the summary is exact: the anchors an event accepts lie in an interval of length ≥ W
(`[ts−W, ts]`, `[ts, ts+W]` or `[ts−W, ts+W]`), and a bucket is W wide, so the interval meets
its own bucket in a prefix, a suffix or the whole bucket, and a neighbouring bucket in a
prefix or suffix: existence there is decided by a minimum or maximum. A zero window buckets
by the timestamp itself.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cepplan.engine_adapter.runtime.spec import NEGATED, PatternSpec
from cepplan.engine_adapter.spark_tags import TAGS, Layout, Tag, acquisition_steps, any_of
from cepplan.workload.columns import EVENT_TS

_ANCHOR, _KEY, _BUCKET = "__anchor", "__key", "__bucket"
_STATS = ("__min0", "__max0", "__max_before", "__min_after")


def acquire(pool: DataFrame, plan: Layout, patterns: tuple[PatternSpec, ...]) -> DataFrame:
    """`pool` with each tag of `patterns` kept only where the plan's acquisition keeps it."""
    rounds = max(len(acquisition_steps(p)) for p in patterns)
    for step in range(1, rounds):
        checks = _checks(plan, patterns, step)
        if checks:
            pool = _round(pool, checks)
    return pool.filter(F.size(TAGS) > 0)


def _checks(plan: Layout, patterns: tuple[PatternSpec, ...],
            step: int) -> dict[Tag, list[Tag]]:
    """Each tag of step `step` (0-based) -> the tags of the positive variables before it."""
    checks: dict[Tag, list[Tag]] = {}
    for spec in patterns:
        steps = acquisition_steps(spec)
        if step >= len(steps):
            continue
        anchors = [plan.tag(spec, v) for s in steps[:step] for v in s
                   if spec.operand(v).kind != NEGATED]
        for var in steps[step]:
            if anchors:
                checks[plan.tag(spec, var)] = anchors
    return checks


def _round(pool: DataFrame, checks: dict[Tag, list[Tag]]) -> DataFrame:
    anchors = sorted({a for found in checks.values() for a in found}, key=lambda t: t.index)
    summary = _summary(pool, anchors)
    tested = pool.filter(any_of(list(checks)))
    untested = pool.filter(~any_of(list(checks)))
    columns = pool.columns
    verdicts: dict[int, Column] = {t.index: F.lit(True) for t in checks}
    for anchor in anchors:
        suffix = f"_{anchor.index}"
        found = summary.filter(F.col(_ANCHOR) == anchor.index).select(
            F.col(_KEY).alias(_KEY + suffix), F.col(_BUCKET).alias(_BUCKET + suffix),
            *[F.col(s).alias(s + suffix) for s in _STATS])
        spec = anchor.pattern
        tested = tested.join(found, (_key(spec) == F.col(_KEY + suffix))
                             & (_bucket(spec) == F.col(_BUCKET + suffix)), "left")
        for tag, needed in checks.items():
            if anchor in needed:
                ok = _accepts(tag, anchor, suffix)
                verdicts[tag.index] = verdicts[tag.index] & ok
        flags = [f"__ok_{t}" for t in verdicts]
        tested = tested.select(*columns, *[v.alias(f) for f, v in
                                           zip(flags, verdicts.values(), strict=True)])
        verdicts = {t: F.col(f) for t, f in zip(verdicts, flags, strict=True)}
    failed = F.filter(F.array(*[F.when(~ok, F.lit(t)) for t, ok in verdicts.items()]),
                      lambda x: x.isNotNull())
    tested = tested.select(*[F.array_except(TAGS, failed).alias(TAGS) if c == TAGS else c
                             for c in columns])
    return untested.unionByName(tested)


def _summary(pool: DataFrame, anchors: list[Tag]) -> DataFrame:
    """Per (anchor tag, key, bucket): min and max timestamp of the anchor's kept events in the
    bucket, the latest one in the bucket before and the earliest in the bucket after."""
    indices = F.array(*[F.lit(a.index) for a in anchors])
    rows = pool.filter(F.arrays_overlap(F.col(TAGS), indices)).select(
        EVENT_TS, *_pattern_columns(anchors),
        F.explode(F.array_intersect(F.col(TAGS), indices)).alias(_ANCHOR))
    rows = rows.select(EVENT_TS, _ANCHOR, _by_anchor(anchors, _key).alias(_KEY),
                       _by_anchor(anchors, _bucket).alias("__own"))
    shift = F.explode(F.array(F.lit(-1), F.lit(0), F.lit(1))).alias("__shift")
    spread = rows.select("*", shift).withColumn(_BUCKET, F.col("__own") + F.col("__shift"))
    ts, shifted = F.col(EVENT_TS), F.col("__shift")
    return spread.groupBy(_ANCHOR, _KEY, _BUCKET).agg(
        F.min(F.when(shifted == 0, ts)).alias("__min0"),
        F.max(F.when(shifted == 0, ts)).alias("__max0"),
        F.max(F.when(shifted == 1, ts)).alias("__max_before"),
        F.min(F.when(shifted == -1, ts)).alias("__min_after"))


def _pattern_columns(anchors: list[Tag]) -> list[str]:
    return sorted({k for a in anchors for k in a.pattern.partition_by})


def _by_anchor(anchors: list[Tag], value) -> Column:
    """A per-row value chosen by the row's anchor tag (its pattern's key, bucket, ...)."""
    result = None
    for anchor in anchors:
        clause = F.col(_ANCHOR) == anchor.index
        chosen = value(anchor.pattern)
        result = F.when(clause, chosen) if result is None else result.when(clause, chosen)
    return result


def _key(spec: PatternSpec) -> Column:
    """The pattern's key as one string; NULL when a key value is missing (matches nothing)."""
    if not spec.partition_by:
        return F.lit("")
    missing = F.lit(False)
    for key in spec.partition_by:
        missing = missing | F.col(key).isNull()
    text = F.to_json(F.array(*[F.col(k).cast("string") for k in spec.partition_by]))
    return F.when(~missing, text)


def _bucket(spec: PatternSpec) -> Column:
    """The time bucket (the window's width; the timestamp itself for a zero window)."""
    if not spec.window:
        return F.col(EVENT_TS)
    return F.floor(F.col(EVENT_TS) / F.lit(float(spec.window))).cast("double")


def _accepts(tag: Tag, anchor: Tag, suffix: str) -> Column:
    """Whether some kept event of `anchor` lies where `tag`'s event accepts it (window and
    SEQ side), from the summary row joined with suffix `suffix`."""
    spec = tag.pattern
    window = float(spec.window or 0.0)
    ts = F.col(EVENT_TS)
    low, high = ts - window, ts + window
    if spec.operator == "SEQ" and anchor.operand.position < tag.operand.position:
        high = ts
    elif spec.operator == "SEQ" and anchor.operand.position > tag.operand.position:
        low = ts
    same = (F.col("__max0" + suffix) >= low) & (F.col("__min0" + suffix) <= high)
    before = F.col("__max_before" + suffix) >= low
    after = F.col("__min_after" + suffix) <= high
    return F.coalesce(same | before | after, F.lit(False))
