"""Acquisition (seed 002 §3.3) for all patterns of a level in shared stages.

Shipped in the job's runtime zip. An event keeps the tag of a step-k variable only when, for
every positive variable of steps 1 … k−1 of that pattern, a kept event of it (same key) lies
within the window on the side the SEQ order allows (inclusive bounds). Tags of step 1 are
kept as tagged.

A tag is tested only against earlier steps, so whether an anchor event is kept is decided
once, in its own step, and every later step reuses it. For each step j that anchors a later
one, one aggregation summarises the kept anchor events of step j of all patterns per (pattern
class: key attributes and window; key; time bucket of the window): the earliest and latest
timestamp in the bucket, the latest of the bucket before and the earliest of the bucket after
(anchors are spread into the three buckets they can serve). The summary is computed once and
materialised (`localCheckpoint`: small, and its lineage no longer grows with the steps), then
broadcast when it has at most `BROADCAST_ROWS` rows. The events a step tests look their bucket
up in the summaries of the steps before (one left join per (class, step) on a unique key: no
row is duplicated) and drop the tags whose test fails; the last pass, over the whole pool,
is not materialised: it feeds the match stage directly.

Why the summary is exact: the anchors an event accepts lie in an interval of length ≥ W
(`[ts−W, ts]`, `[ts, ts+W]` or `[ts−W, ts+W]`), and a bucket is W wide, so the interval meets
its own bucket in a prefix, a suffix or the whole bucket, and a neighbouring bucket in a
prefix or suffix: existence there is decided by a minimum or maximum. A zero window buckets
by the timestamp itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from cepplan.engine_adapter.runtime.spec import NEGATED, PatternSpec
from cepplan.engine_adapter.spark_tags import (
    TAGS,
    Layout,
    Tag,
    acquisition_steps,
    any_of,
    present,
)
from cepplan.workload.columns import EVENT_ID, EVENT_TS

_CLASS, _KEY, _BUCKET, _SHIFT = "__class", "__key", "__bucket", "__shift"
_STATS = ("__min0", "__max0", "__max_before", "__min_after")
BROADCAST_ROWS = 2_000_000  # summary rows sent whole to every task (about 100 bytes each)

Class = tuple[tuple[str, ...], float]  # a pattern's key attributes and window


@dataclass(frozen=True)
class Summary:
    """One step's kept anchors, per (class, key, bucket), materialised."""

    step: int
    frame: DataFrame
    classes: dict[Class, list[Tag]]  # class -> the step's anchor tags of that class
    broadcast: bool


def acquire(pool: DataFrame, plan: Layout, patterns: tuple[PatternSpec, ...]) -> DataFrame:
    """`pool` with each tag of `patterns` kept only where the plan's acquisition keeps it."""
    checks = _checks(plan, patterns)
    if not checks:
        return pool
    anchors_by_step: dict[int, set[Tag]] = {}
    for found in checks.values():
        for anchor in found:
            anchors_by_step.setdefault(anchor.step, set()).add(anchor)
    summaries: dict[int, Summary] = {}
    for step in sorted(anchors_by_step):
        anchors = sorted(anchors_by_step[step], key=lambda t: t.index)
        rows = pool.filter(any_of(anchors))
        tested = {t: a for t, a in checks.items() if t in anchors}
        if tested:
            rows = _verified(rows, tested, summaries)
        summaries[step] = _summarise(rows, anchors, step)
    return _verified(pool, checks, summaries)  # the match stage drops rows left untagged


def _checks(plan: Layout, patterns: tuple[PatternSpec, ...]) -> dict[Tag, list[Tag]]:
    """Each tag of a step after the first -> the tags of the positive variables before it."""
    checks: dict[Tag, list[Tag]] = {}
    for spec in patterns:
        steps = acquisition_steps(spec)
        for step in range(1, len(steps)):
            anchors = [plan.tag(spec, v) for s in steps[:step] for v in s
                       if spec.operand(v).kind != NEGATED]
            for var in steps[step]:
                if anchors:
                    checks[plan.tag(spec, var)] = anchors
    return checks


def class_of(spec: PatternSpec) -> Class:
    """What a summary row's key and bucket depend on."""
    return tuple(spec.partition_by), float(spec.window or 0.0)


def _summarise(rows: DataFrame, anchors: list[Tag], step: int) -> Summary:
    """Per (class, key, bucket): min and max timestamp of each anchor's kept events in the
    bucket, the latest one in the bucket before and the earliest in the bucket after."""
    classes: dict[Class, list[Tag]] = {}
    for anchor in anchors:
        classes.setdefault(class_of(anchor.pattern), []).append(anchor)
    numbered = list(classes.items())
    classes_present = present([F.when(any_of(found), F.lit(n))
                               for n, (_, found) in enumerate(numbered)])
    keys = sorted({k for a in anchors for k in a.pattern.partition_by})
    rows = rows.filter(any_of(anchors)).select(EVENT_TS, TAGS, *keys,
                                               F.explode(classes_present).alias(_CLASS))
    key, bucket = None, None
    for n, (_, found) in enumerate(numbered):
        clause, spec = F.col(_CLASS) == n, found[0].pattern
        key = F.when(clause, _key(spec)) if key is None else key.when(clause, _key(spec))
        bucket = (F.when(clause, _bucket(spec)) if bucket is None
                  else bucket.when(clause, _bucket(spec)))
    shift = F.explode(F.array(F.lit(-1), F.lit(0), F.lit(1))).alias(_SHIFT)
    spread = rows.select(EVENT_TS, TAGS, _CLASS, key.alias(_KEY), bucket.alias("__own"), shift)
    spread = spread.withColumn(_BUCKET, F.col("__own") + F.col(_SHIFT))
    ts, shifted = F.col(EVENT_TS), F.col(_SHIFT)
    stats = []
    for n, (_, found) in enumerate(numbered):
        for anchor in found:
            mine = (F.col(_CLASS) == n) & F.array_contains(TAGS, anchor.index)
            suffix = f"_{anchor.index}"
            stats += [F.min(F.when(mine & (shifted == 0), ts)).alias("__min0" + suffix),
                      F.max(F.when(mine & (shifted == 0), ts)).alias("__max0" + suffix),
                      F.max(F.when(mine & (shifted == 1), ts)).alias("__max_before" + suffix),
                      F.min(F.when(mine & (shifted == -1), ts)).alias("__min_after" + suffix)]
    size = Observation(f"summary {step}")  # its row count, without another job
    frame = spread.groupBy(_CLASS, _KEY, _BUCKET).agg(*stats) \
        .observe(size, F.count(F.lit(1)).alias("rows")).localCheckpoint(eager=True)
    return Summary(step, frame, dict(numbered), size.get["rows"] <= BROADCAST_ROWS)


def _verified(frame: DataFrame, checks: dict[Tag, list[Tag]],
              summaries: dict[int, Summary]) -> DataFrame:
    """`frame` with each tag of `checks` dropped where one of its anchors has no kept event
    in reach, looked up in the anchors' step summaries."""
    columns = frame.columns
    needed = {(a.step, list(summaries[a.step].classes).index(class_of(a.pattern)))
              for found in checks.values() for a in found}
    for step, number in sorted(needed):
        summary = summaries[step]
        cls = list(summary.classes)[number]
        spec = summary.classes[cls][0].pattern
        suffix = f"_{number}_{step}"
        found = summary.frame.filter(F.col(_CLASS) == number).select(
            F.col(_KEY).alias(_KEY + suffix), F.col(_BUCKET).alias(_BUCKET + suffix),
            *[F.col(s + f"_{a.index}") for a in summary.classes[cls] for s in _STATS])
        testing = any_of([t for t, anchors in checks.items()
                          if any(class_of(a.pattern) == cls and a.step == step
                                 for a in anchors)])
        key = F.when(testing, _key(spec))
        if summary.broadcast:
            found = F.broadcast(found)
        else:  # rows not tested get distinct keys that match nothing: no skewed null group
            key = F.coalesce(key, F.concat(F.lit("\u0001"), F.col(EVENT_ID).cast("string")))
        frame = frame.join(found, (key == F.col(_KEY + suffix))
                           & (_bucket(spec) == F.col(_BUCKET + suffix)), "left")
    failed = F.array(*[F.when(~_passes(tag, anchors), F.lit(tag.index))
                       for tag, anchors in checks.items()])  # NULLs remove nothing
    kept = F.when(any_of(list(checks)), F.array_except(TAGS, failed)).otherwise(F.col(TAGS))
    # Spark inlines a deterministic column into every later reference (each tag test of the
    # match stage's filter would recompute the verdicts: measured 3x slower); a
    # nondeterministic, always-true guard keeps it computed once per row
    kept = F.when(F.spark_partition_id() >= 0, kept)
    return frame.select(*[kept.alias(TAGS) if c == TAGS else c for c in columns])


def _passes(tag: Tag, anchors: list[Tag]) -> Column:
    """Whether every anchor of `tag` has a kept event in reach (true for rows without it)."""
    ok = F.lit(True)
    for anchor in anchors:
        ok = ok & _accepts(tag, anchor)
    return ~F.array_contains(TAGS, tag.index) | ok


def _key(spec: PatternSpec) -> Column:
    """The pattern's key as one string; NULL when a key value is missing (matches nothing)."""
    if not spec.partition_by:
        return F.lit("")
    if len(spec.partition_by) == 1:
        return F.col(spec.partition_by[0]).cast("string")
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


def _accepts(tag: Tag, anchor: Tag) -> Column:
    """Whether some kept event of `anchor` lies where `tag`'s event accepts it (window and
    SEQ side), from the summary row joined beside the event."""
    spec = tag.pattern
    window = float(spec.window or 0.0)
    ts = F.col(EVENT_TS)
    low, high = ts - window, ts + window
    if spec.operator == "SEQ" and anchor.operand.position < tag.operand.position:
        high = ts
    elif spec.operator == "SEQ" and anchor.operand.position > tag.operand.position:
        low = ts
    suffix = f"_{anchor.index}"
    same = (F.col("__max0" + suffix) >= low) & (F.col("__min0" + suffix) <= high)
    before = F.col("__max_before" + suffix) >= low
    after = F.col("__min_after" + suffix) <= high
    return F.coalesce(same | before | after, F.lit(False))
