"""The context stage inside the Spark job (docs/contexts.md, "The Spark job"; seed 003 §5.2).

Shipped in the job's runtime zip. The deriving patterns (and those they are built from) are
evaluated first, on the driver, by the runtime's `derive_contexts` over their tagged rows,
collected (they are few after tagging); the windows go to the executors as a broadcast. Every
other pattern's tags are dropped outside its windows before acquisition (push-down, Thm 1; the
runtime's `pushed_down` per Arrow batch), its matches kept when they lie in one holding
(`counting_mask`), and metrics.json's `contexts` is made by the runtime's `contexts_metrics`,
so both engines report the same figures.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cepplan.engine_adapter.runtime.context_windows import ContextSpec
from cepplan.engine_adapter.runtime.contexts import (
    Derived,
    built_from,
    contexts_metrics,
    counting_mask,
    derive_contexts,
    has_contexts,
    pattern_metrics,
    pushed_down,
)
from cepplan.engine_adapter.runtime.job import Job
from cepplan.engine_adapter.runtime.records import MATCH_COLUMN
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.spark.match import PATTERN, Counts, output_schema
from cepplan.engine_adapter.spark.tags import TAGS, Layout, any_of, tag_column
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, EVENT_ZONE
from cepplan.workload.spark_source import spark_type

_INSIDE = "__inside_"


class SparkContexts:
    """One job's context stage: `derive` once the pool is tagged, `push_down` each level's
    rows before acquisition, `held` on each match frame, `outputs` adds the deriving
    patterns' matches, `finish` fills metrics.json."""

    def __init__(self, spark: SparkSession, job: Job, data: dict[str, Any], events: DataFrame):
        self.spark, self.job, self.data, self.events = spark, job, data, events
        self.spec = ContextSpec.from_json(data["contexts"])
        self.emit_types = {a: k for p in data["patterns"] for a, k in
                           p.get("emit_types", {}).items()}
        self.plan: Layout | None = None
        self.derived: Derived | None = None
        self.windows: Any = None  # the broadcast Windows
        self.seen: dict[str, int] = {}
        self.kept = spark.sparkContext.accumulator({}, Counts())
        self.cached: list[DataFrame] = []

    @classmethod
    def of(cls, spark: SparkSession, job: Job, data: dict[str, Any],
           events: DataFrame) -> SparkContexts | None:
        return cls(spark, job, data, events) if has_contexts(job) else None

    def derive(self, pool: DataFrame, plan: Layout) -> tuple[DataFrame, Layout]:
        """Deriving patterns first, on the driver over their collected tagged rows: the
        windows (broadcast), their counted matches; returns the pool with their complex
        events (tagged for the patterns above) and the layout without them."""
        first = built_from(self.spec.deriving, self.job)
        types = sorted({o.type for n in first for o in self.job.pattern(n).operands
                        if not self.job.is_complex(o.type)})
        rows = pool.filter(F.col(EVENT_TYPE).isin(types)).drop(TAGS).toPandas()
        rows = rows.sort_values(EVENT_ID, kind="stable").reset_index(drop=True)  # file order
        self.derived = derive_contexts(rows, self.job, self.spec)
        self.windows = self.spark.sparkContext.broadcast(self.derived.windows)
        self.plan = replace(plan, levels=tuple(
            kept for kept in (tuple(p for p in level if p.name not in self.derived.matches)
                              for level in plan.levels) if kept))
        made = [f for f in self.derived.complex_frames if len(f)]
        if made:
            pool = pool.unionByName(self._tagged(pd.concat(made, ignore_index=True)),
                                    allowMissingColumns=True)
        return pool, self.plan

    def push_down(self, frame: DataFrame, patterns: tuple[PatternSpec, ...]) -> DataFrame:
        """`frame` with each context-bound pattern's tags dropped outside its windows (widened
        for negations); counts the rows each pattern of the level then sees."""
        bound = [p for p in patterns if self.spec.contexts_of(p.name)]
        pushed = frame
        if bound:
            spec, windows = self.spec, self.windows
            flags = {p.name: f"{_INSIDE}{i}" for i, p in enumerate(bound)}

            def inside(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
                for batch in batches:
                    yield batch.assign(**{flags[p.name]: pushed_down(batch, p, spec,
                                                                     windows.value)
                                          for p in bound})

            schema = T.StructType([*frame.schema.fields, *[
                T.StructField(f, T.BooleanType(), False) for f in flags.values()]])
            tags = F.col(TAGS)
            for spec_ in bound:
                own = F.array(*[F.lit(t.index) for t in self.plan.of(spec_)])
                tags = F.when(F.col(flags[spec_.name]), tags).otherwise(F.array_except(tags,
                                                                                        own))
            pushed = (frame.mapInPandas(inside, schema)
                      .withColumn(TAGS, tags).drop(*flags.values())
                      .filter(F.size(TAGS) > 0).persist())
            self.cached.append(pushed)
        counted = pushed.agg(*[F.count_if(any_of(self.plan.of(p))).alias(p.name)
                               for p in patterns]).first()
        self.seen.update({p.name: int(counted[p.name] or 0) for p in patterns})
        return pushed

    def held(self, results: DataFrame, patterns: list[PatternSpec]) -> DataFrame:
        """The matches that count: for a context-bound pattern, those inside one holding of
        one of its contexts; counted per pattern."""
        bound = {p.name: self.spec.contexts_of(p.name) for p in patterns
                 if self.spec.contexts_of(p.name)}
        if not bound:
            return results
        spec, windows, kept = self.spec, self.windows, self.kept

        def keep(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            counts: Counter = Counter()
            for batch in batches:
                mask = np.ones(len(batch), dtype=bool)
                names = batch[PATTERN].to_numpy()
                for name, contexts in bound.items():
                    rows = names == name
                    if rows.any():
                        mask[rows] = counting_mask(batch.loc[rows, MATCH_COLUMN].tolist(),
                                                   contexts, windows.value, spec)
                        counts[("matches", name)] += int(mask[rows].sum())
                yield batch[mask]
            kept.add(dict(counts))

        return results.mapInPandas(keep, results.schema)

    def outputs(self, outputs: list[DataFrame]) -> list[DataFrame]:
        """The match frames with the deriving patterns' counted matches first."""
        rows = [(name, json.dumps(obj)) for name, objects in self.derived.matches.items()
                for obj in objects]
        schema = output_schema(self.emit_types, any(EVENT_ZONE in o.columns for o in outputs))
        frame = self.spark.createDataFrame(
            [(name, text, *[None] * (len(schema.fields) - 2)) for name, text in rows], schema)
        return [frame, *outputs]

    def finish(self, metrics: dict[str, Any]) -> None:
        """The deriving patterns' counts, the held matches, and metrics.json's `contexts`."""
        derived, job = self.derived, self.job
        by_pattern = metrics["rows_to_matchers_by_pattern"]
        kept = self.kept.value
        for name, objects in derived.matches.items():
            metrics["matches"][name] = len(objects)
            metrics["kleene_cap_hits"][name] = derived.cap_hits.get(name, 0)
            metrics["negation_held_back"][name] = derived.held_back.get(name, 0)
        for name in self.seen:
            if self.spec.contexts_of(name):
                metrics["matches"][name] = kept.get(("matches", name), 0)
        primitive, keys, span = self._observed()
        made = Counter({t: int(n) for f in derived.complex_frames if len(f)
                        for t, n in f[EVENT_TYPE].astype(str).value_counts().items()})
        consumed = {o.type for p in job.patterns for o in p.operands}
        made.update({n: metrics["matches"][n] for n in self.seen if n in consumed})
        patterns = {}
        for name in derived.matches:  # judged before any complex event exists
            rows = sum(primitive[t] for t in self._types(name))
            seen = derived.seen.get(name, rows)
            by_pattern[name] = seen
            patterns[name] = pattern_metrics(rows, seen, self.spec.contexts_of(name),
                                             derived.windows, keys, span)
        for name, seen in self.seen.items():
            rows = sum(primitive[t] + made[t] for t in self._types(name))
            patterns[name] = pattern_metrics(rows, seen, self.spec.contexts_of(name),
                                             derived.windows, keys, span)
        metrics["rows_to_matchers"] = sum(by_pattern.values())
        metrics["contexts"] = contexts_metrics(derived.windows, patterns, metrics["matches"],
                                               job)
        for frame in self.cached:
            frame.unpersist()

    def _types(self, name: str) -> set[str]:
        return {o.type for o in self.job.pattern(name).operands}

    def _observed(self) -> tuple[Counter, list[tuple], tuple[float, float]]:
        """Rows per event type, the context partitions in order of first appearance, and the
        time span of the good rows (the in-process engine gathers them while reading)."""
        per_type = self.events.groupBy(EVENT_TYPE).agg(
            F.count(F.lit(1)).alias("rows"), F.min(EVENT_TS).alias("low"),
            F.max(EVENT_TS).alias("high")).collect()
        primitive = Counter({str(r[EVENT_TYPE]): int(r["rows"]) for r in per_type})
        lows = [r["low"] for r in per_type]
        span = (float(min(lows)), float(max(r["high"] for r in per_type))) if lows else (0.0,
                                                                                         0.0)
        attributes = list(self.spec.partition_by)
        if not attributes:
            return primitive, [()], span
        found = (self.events.dropna(subset=attributes).groupBy(*attributes)
                 .agg(F.min(EVENT_ID).alias("first")).orderBy("first").collect())
        return primitive, [tuple(r[a] for a in attributes) for r in found], span

    def _tagged(self, made: pd.DataFrame) -> DataFrame:
        """Complex events of deriving patterns as a Spark frame, tagged for the patterns
        above."""
        emits = [a for a in self.emit_types if a in made.columns]
        schema = T.StructType([T.StructField(EVENT_TYPE, T.StringType(), False),
                               T.StructField(EVENT_TS, T.DoubleType(), True),
                               T.StructField(EVENT_ID, T.LongType(), True),
                               *[T.StructField(a, spark_type(self.emit_types[a]), True)
                                 for a in emits],
                               T.StructField(MATCH_COLUMN, T.StringType(), True)])
        columns = [f.name for f in schema.fields]
        frame = self.spark.createDataFrame(made[columns].astype(object).where(
            made[columns].notna(), None), schema)
        upper = [t for t in self.plan.tags if self.job.is_complex(t.operand.type)]
        tagged = frame.select("*", tag_column(self.job, self.plan, upper, columns).alias(TAGS))
        return tagged.filter(F.size(TAGS) > 0)
