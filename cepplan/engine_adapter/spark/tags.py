"""Which (pattern, variable) pairs each event can bind, for the whole workload in one pass.

Shipped in the job's runtime zip. Every variable of every pattern gets a small integer tag;
one native Spark expression (filters compiled by `spark.expr`, no Python worker) gives each
event the array of tags whose type and one-variable filters it satisfies (seed 001 step 1,
filter push-down). Patterns are grouped in levels: a pattern reading another pattern's
matches runs a level above it (children first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from cepplan.engine_adapter.runtime.job import Job
from cepplan.engine_adapter.runtime.spec import NEGATED, PatternSpec
from cepplan.engine_adapter.spark.expr import attribute_resolver, column_of
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE, merged_attribute_types

TAGS = "__tags"
FEW_TAGS = 16  # tags tested one by one in generated code (more: one array operation)


@dataclass(frozen=True)
class Tag:
    """One variable of one pattern: its number, and the acquisition step it is pulled in."""

    index: int
    pattern: PatternSpec = field(compare=False)
    var: str
    step: int

    @property
    def operand(self):
        return self.pattern.operand(self.var)


@dataclass(frozen=True)
class Layout:
    """The workload as the job evaluates it: tags, acquisition steps, levels, column types."""

    tags: tuple[Tag, ...]
    levels: tuple[tuple[PatternSpec, ...], ...]
    kinds: Mapping[str, str]  # attribute -> double|long|string|bool

    def of(self, pattern: PatternSpec) -> list[Tag]:
        return [t for t in self.tags if t.pattern.name == pattern.name]

    def tag(self, pattern: PatternSpec, var: str) -> Tag:
        return next(t for t in self.of(pattern) if t.var == var)


def acquisition_steps(spec: PatternSpec) -> list[list[str]]:
    """The plan's steps (seed 002 §3.3); one step for OR and for patterns without a window."""
    if spec.operator == "OR" or spec.window is None or not spec.steps:
        return [[o.var for o in spec.operands]]
    return [list(s) for s in spec.steps]


def layout(job: Job, data: Mapping[str, Any]) -> Layout:
    """Number every variable, sort patterns into levels, and collect attribute types."""
    tags: list[Tag] = []
    for spec in job.patterns:
        steps = acquisition_steps(spec)
        for operand in spec.operands:
            step = next((i for i, s in enumerate(steps) if operand.var in s), 0)
            tags.append(Tag(len(tags), spec, operand.var, step))
    level: dict[str, int] = {}
    for spec in job.patterns:  # children before parents
        level[spec.name] = max((level[o.type] + 1 for o in spec.operands if o.type in level),
                               default=0)
    levels = tuple(tuple(p for p in job.patterns if level[p.name] == n)
                   for n in range(max(level.values(), default=0) + 1))
    declared = [*(data.get("reader") or {}).get("attributes", {}).values(),
                *(p.get("emit_types", {}) for p in data["patterns"])]
    return Layout(tuple(tags), levels, merged_attribute_types(declared))


def tag_column(job: Job, plan: Layout, tags: list[Tag], columns: list[str]) -> Column:
    """The array of `tags` each row qualifies for (type and filters), as one Spark expression
    over a frame with `columns`."""
    resolve = attribute_resolver({c: plan.kinds.get(c, "double") for c in columns}, EVENT_TS)
    by_type: dict[str, list[Column]] = {}
    for tag in tags:
        stages = job.stages[tag.pattern.name]
        filters = (stages.negation_filters if tag.operand.kind == NEGATED
                   else stages.filters).get(tag.var, [])
        condition = F.lit(True)
        for tree in filters:
            condition = condition & column_of(tree, resolve)
        by_type.setdefault(tag.operand.type, []).append(
            F.when(F.coalesce(condition, F.lit(False)), F.lit(tag.index)))
    empty = F.array().cast("array<int>")
    result = None
    for type_name, options in by_type.items():
        chosen = present(options)
        clause = F.col(EVENT_TYPE) == type_name
        result = F.when(clause, chosen) if result is None else result.when(clause, chosen)
    return empty if result is None else result.otherwise(empty)


def present(values: list[Column]) -> Column:
    """The array of `values` that are not NULL, in order: `array_except` with a NULL, which
    Spark compiles (a lambda `filter` would be interpreted row by row)."""
    return F.array_except(F.array(*values), F.array(F.lit(None).cast("int")))


def any_of(tags: list[Tag]) -> Column:
    """Whether a row's tags include any of `tags`: for a few, one `array_contains` per tag, a
    scan of the row's few tags without allocation (`arrays_overlap` builds a hash set per
    row); for more than `FEW_TAGS`, one `arrays_overlap` with their numbers (a chain of
    hundreds of tests outgrows the 64 KB of one generated Java method, and Spark then
    compiles the whole stage again without whole-stage code generation)."""
    if len(tags) > FEW_TAGS:
        return F.arrays_overlap(F.col(TAGS), F.array(*[F.lit(t.index) for t in tags]))
    found = F.lit(False)
    for tag in tags:
        found = found | F.array_contains(TAGS, tag.index)
    return found
