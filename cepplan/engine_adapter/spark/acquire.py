"""Acquisition (seed 002 §3.3): a cheap pre-filter before the match shuffle, the exact
semi-joins inside the match groups, where a key's events already sit.

Shipped in the job's runtime zip. An event keeps the tag of a step-k variable only when, for
every positive variable of steps 1 … k−1 of that pattern, a kept event of it (same key) lies
within the window on the side the SEQ order allows (inclusive bounds); tags of step 1 are
kept as tagged.

1. **Pre-filter** (`prefilter`, one Spark job for all patterns): the events of the variables
   that anchor a later step (rare, when the plan is good) are collected to the driver, where
   the in-process engine's NumPy semi-joins (`runtime.acquire`) decide which of them are kept.
   Each kept anchor marks its key's time bucket (the window's width) and the two beside it;
   a tag of a later step is then dropped, in the same pass that feeds the match shuffle,
   when an anchor of it has no mark at the event's own (key, bucket): a hash look-up per
   row, no join. It never drops a tag acquisition keeps (a kept anchor within the window
   lies in the event's bucket or a neighbour), so the rows it removes are only ones the
   matchers would not receive, and it stops them before the shuffle.
2. **Exact semi-joins** (`acquire_group`) per match group over the rows left.

Measured on the fraud example (2·10^6 events): the former shared stages (a summary job and
checkpoint per step, broadcast joins over the tagged pool) cost about 7 s of jobs and driver
time per run while the rows they kept out of the shuffle saved about 1 s.

Exactness of the groups: whether an event keeps a step-k tag depends on kept anchors within
one window, whose own tags depend on events one window further, so on events at most
(steps − 1) windows away. A group is therefore widened by that margin on both sides
(`margin`) and decides acquisition over all its rows; only the rows of its usual range
(`INNER`) go to the matchers, and their verdicts equal those over the whole pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cepplan.engine_adapter.runtime.acquire import acquire, kept_rows
from cepplan.engine_adapter.runtime.spec import NEGATED, PatternSpec
from cepplan.engine_adapter.runtime.tagging import tag
from cepplan.engine_adapter.spark.tags import (
    FEW_TAGS,
    TAGS,
    Layout,
    Tag,
    acquisition_steps,
    any_of,
)
from cepplan.workload.columns import EVENT_TS

INNER = "__inner"  # the row lies in the group's own range plus its match margins
ANCHOR_ROWS = 1_000_000  # anchor events the driver takes at most (else: no pre-filter)
MARKS = 1_000_000  # marks of one class of anchors at most (else: they filter nothing)
_MARK = "__mark"


def prefilter(pool: DataFrame, plan: Layout, patterns: tuple[PatternSpec, ...],
              rows: int) -> DataFrame:
    """`pool` (`rows` events) without the later-step tags whose anchors have no kept event
    in the event's key and time bucket or the buckets beside it (never a tag acquisition
    keeps)."""
    checks = {t: a for t, a in _checks(plan, patterns).items() if t.pattern.window}
    anchors = sorted({a for found in checks.values() for a in found}, key=lambda t: t.index)
    if not anchors:
        return pool
    tables = _marks(pool, anchors, rows)
    if tables is None:
        return pool
    spark = pool.sparkSession
    # Catalyst's constraint propagation expands the verdict's aliases through the joins below
    # (it exhausted a 1 GiB driver heap on the 15 property-test patterns); it infers only
    # not-null filters here
    spark.conf.set("spark.sql.constraintPropagation.enabled", "false")
    frame, bits = pool, {}
    for n, (spec, numbered, table) in enumerate(tables):
        if len(table) > MARKS:  # too many to broadcast: these anchors filter nothing
            continue
        name = f"__bits{n}"
        marks = _small_frame(spark, table.rename(columns={"bits": name}))
        frame = frame.join(F.broadcast(marks), _mark(spec, 0) == F.col(_MARK), "left") \
            .drop(_MARK)
        bits.update({anchor: (name, bit) for anchor, bit in numbered.items()})
    kept = _verdicts(checks, bits)
    # Spark inlines a deterministic column into every later reference (each tag test of the
    # match stage would recompute the verdicts); a nondeterministic, always-true guard keeps
    # it computed once per row
    kept = F.when(F.spark_partition_id() >= 0, kept)
    return frame.select(*[kept.alias(TAGS) if c == TAGS else c for c in pool.columns])


def _verdicts(checks: Mapping[Tag, list[Tag]], bits: Mapping[Tag, tuple[str, int]]) -> Column:
    """The row's tags without the tested ones whose anchors' bits (`bits`: anchor -> its
    marks column and bit) are not all set. A few tested tags: one test each, in generated
    code. More than `FEW_TAGS`: one `filter` over the row's tags against a map per marks
    column (tested tag -> the bits it needs), whose size does not grow with the tags (one
    test each outgrows the 64 KB of a generated Java method at some 180 tags)."""
    if len(checks) > FEW_TAGS:
        needs: dict[str, dict[int, int]] = {}
        for tested, found in checks.items():
            for column, bit in (bits[a] for a in found if a in bits):
                need = needs.setdefault(column, {})
                need[tested.index] = need.get(tested.index, 0) | 1 << bit

        def passes(number: Column) -> Column:
            ok = F.lit(True)
            for column, need in needs.items():
                table = F.create_map(*[c for tag, mask in need.items()
                                       for c in (F.lit(tag), F.lit(mask).cast("long"))])
                wanted = F.coalesce(F.try_element_at(table, number), F.lit(0).cast("long"))
                ok = ok & ((F.coalesce(F.col(column), F.lit(0)).bitwiseAND(wanted)) == wanted)
            return ok

        return F.filter(F.col(TAGS), passes)
    failed = []
    for tested, found in checks.items():
        ok = F.lit(True)
        for anchor in found:
            if anchor in bits:
                column, bit = bits[anchor]
                ok = ok & (F.coalesce(F.col(column), F.lit(0)).bitwiseAND(1 << bit) != 0)
        failed.append(F.when(F.array_contains(TAGS, tested.index) & ~ok, F.lit(tested.index)))
    return F.when(any_of(list(checks)), F.array_except(TAGS, F.array(*failed))) \
        .otherwise(F.col(TAGS))  # a NULL in `failed` removes nothing


def _small_frame(spark: SparkSession, table: pd.DataFrame) -> DataFrame:
    """A Spark frame of a small table of longs, sent through Arrow (0.1 s for 20,000 rows;
    row by row 0.6–1.8 s)."""
    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, "true")
    try:
        return spark.createDataFrame(table, ", ".join(f"{c} long" for c in table.columns))
    finally:
        spark.conf.set(key, before)


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


def _marks(pool: DataFrame, anchors: list[Tag], rows: int
           ) -> list[tuple[PatternSpec, dict[Tag, int], pd.DataFrame]] | None:
    """Per class of anchors (one key and window, at most 62 anchors): a table of marks
    (hashes of key and time bucket) with a bit per anchor set when a kept event of it lies in
    that bucket or a neighbouring one. None when there are more than `ANCHOR_ROWS` anchor
    events."""
    specs = {a.pattern.name: a.pattern for a in anchors}
    keys = sorted({k for spec in specs.values() for k in spec.partition_by})
    numbered = list(specs)
    columns = [F.col(EVENT_TS), *[F.col(k) for k in keys],
               *[_mark(specs[n], d).alias(f"{_MARK}{i}_{d}")
                 for i, n in enumerate(numbered) for d in (-1, 0, 1)],
               *[F.array_contains(TAGS, a.index).alias(f"__a{a.index}") for a in anchors]]
    query = pool.filter(any_of(anchors)).select(*columns)
    found = (query.limit(ANCHOR_ROWS + 1) if rows > ANCHOR_ROWS else query).toArrow().to_pandas()
    if len(found) > ANCHOR_ROWS:
        return None
    classes: dict[tuple, tuple[PatternSpec, list[Tag], list[pd.DataFrame]]] = {}
    for i, name in enumerate(numbered):
        spec = specs[name]
        mine = [a for a in anchors if a.pattern.name == name]
        masks = {tag(name, o.var): np.zeros(len(found), dtype=bool) for o in spec.operands}
        masks.update({tag(name, a.var): found[f"__a{a.index}"].to_numpy(dtype=bool)
                      for a in mine})
        kept = kept_rows(found, masks, spec)
        _, listed, parts = classes.setdefault((tuple(spec.partition_by), float(spec.window)),
                                              (spec, [], []))
        for anchor in mine:
            at = found.iloc[kept[anchor.var]]
            listed.append(anchor)
            parts.append(pd.DataFrame({_MARK: pd.concat([at[f"{_MARK}{i}_{d}"]
                                                         for d in (-1, 0, 1)]),
                                       "anchor": anchor.index}))
    tables = []
    for spec, listed, parts in classes.values():
        marks = pd.concat(parts).dropna()
        for first in range(0, len(listed), 62):
            chunk = {a: bit for bit, a in enumerate(listed[first:first + 62])}
            bit = {a.index: 1 << b for a, b in chunk.items()}
            part = marks[marks["anchor"].isin(list(bit))]
            pairs = pd.DataFrame({_MARK: part[_MARK].astype(np.int64),
                                  "bits": part["anchor"].map(bit).astype(np.int64)})
            # distinct powers of two per mark: their sum is their bitwise or
            summed = pairs.drop_duplicates().groupby(_MARK)["bits"].sum()
            tables.append((spec, chunk, pd.DataFrame({
                _MARK: summed.index.to_numpy(np.int64), "bits": summed.to_numpy(np.int64)})))
    return tables


def _mark(spec: PatternSpec, shift: int) -> Column:
    """A hash of the event's key and time bucket (the window's width) moved by `shift`
    buckets; NULL when a key value is missing (such events match nothing)."""
    bucket = F.floor(F.col(EVENT_TS) / F.lit(float(spec.window))).cast("long") + F.lit(shift)
    mark = F.xxhash64(*[F.col(k) for k in spec.partition_by], bucket)
    missing = F.lit(False)
    for key in spec.partition_by:
        missing = missing | F.col(key).isNull()
    return F.when(~missing, mark)


@dataclass(frozen=True)
class GroupAcquisition:
    """Which patterns of a scheme acquire in the groups, and how (plain data: it travels to
    the Python workers inside the match function)."""

    columns: Mapping[str, Mapping[str, str]]  # pattern -> variable -> its tag's flag column
    indices: Mapping[str, int]  # flag column -> tag number (the groups set the flags)
    margin: float  # time beyond the group's range that its verdicts depend on


def group_acquisition(plan: Layout, patterns: list[PatternSpec]) -> GroupAcquisition:
    """The scheme's patterns with more than one acquisition step and their tag flags."""
    columns: dict[str, dict[str, str]] = {}
    indices: dict[str, int] = {}
    margin = 0.0
    for spec in patterns:
        steps = acquisition_steps(spec)
        if len(steps) < 2:
            continue
        columns[spec.name] = {}
        for found in plan.of(spec):
            name = f"__tag{found.index}"
            columns[spec.name][found.var] = name
            indices[name] = found.index
        margin = max(margin, (len(steps) - 1) * float(spec.window or 0.0))
    return GroupAcquisition(columns, indices, margin)


def acquire_group(group: pd.DataFrame, patterns: Mapping[str, PatternSpec],
                  how: GroupAcquisition, flags: Mapping[str, str]) -> None:
    """Set each pattern's row flag in `group` to the rows its matcher receives: acquired
    (for patterns that acquire) and inside the group's own range."""
    inner = group[INNER].to_numpy(dtype=bool)
    for name, flag in flags.items():
        columns = how.columns.get(name)
        if columns is None:
            group[flag] = group[flag].to_numpy(dtype=bool) & inner
            continue
        mine = group[flag].to_numpy(dtype=bool)  # acquisition sees only the pattern's rows
        spec = patterns[name]
        rows = group.loc[mine, [EVENT_TS, *spec.partition_by, *columns.values()]]
        masks = {tag(name, var): rows[column].to_numpy(dtype=bool)
                 for var, column in columns.items()}
        mine[mine] = acquire(rows, masks, spec)
        group[flag] = mine & inner
