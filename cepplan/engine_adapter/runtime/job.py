"""The job's data (`job.json`, format `cepplan.job/1`) and the per-partition entry point.

The generated Spark job and the local runner both call `evaluate_partition` on the events of
one partition (one key value, one owned time range) of one pattern.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from cepplan.engine_adapter.runtime.contiguity import contiguous_pairs, timeline_column
from cepplan.engine_adapter.runtime.match_rows import PatternColumns, table_rows, text_rows
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS, match_partition, match_pieces
from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.memory import match_bytes
from cepplan.engine_adapter.runtime.positions import position_column
from cepplan.engine_adapter.runtime.records import (
    MATCH_COLUMN,
    EventTexts,
    Renderer,
    complex_events,
    with_rows,
)
from cepplan.engine_adapter.runtime.spec import (
    PatternSpec,
    SpecError,
    Stages,
    compile_pattern,
    pattern_from_json,
)
from cepplan.engine_adapter.runtime.table import Columns, Table, key_codes, make_table
from cepplan.sources.time_format import has_zone
from cepplan.workload.columns import EVENT_ZONE

if TYPE_CHECKING:  # imported where used: the in-process engine's plain path runs without it
    import pandas as pd

FORMAT = "cepplan.job/1"


@dataclass(frozen=True)
class Job:
    """The patterns to evaluate, children before parents, and each type's attributes;
    `span`: the time the input covers, from its first event's timestamp to its last (or to
    the last read so far, when matched as read): a negation is decided only inside it."""

    patterns: tuple[PatternSpec, ...]
    stages: Mapping[str, Stages]
    types: Mapping[str, tuple[str, ...]]
    data: Mapping[str, Any] = field(default_factory=dict)
    span: tuple[float, float] = (-math.inf, math.inf)

    def pattern(self, name: str) -> PatternSpec:
        for spec in self.patterns:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def is_complex(self, type_name: str) -> bool:
        return type_name in self._names

    @cached_property
    def _names(self) -> frozenset[str]:
        """The patterns' names, found once: `is_complex` is asked per operand and partition."""
        return frozenset(p.name for p in self.patterns)


@dataclass
class Covered:
    """The time an input covers, from its events' timestamps as they are read (`Job.span`)."""

    first: float = math.inf
    last: float = -math.inf

    def add(self, first: float, last: float) -> None:
        """Widen by a batch's first and last timestamps."""
        self.first, self.last = min(self.first, first), max(self.last, last)

    @property
    def span(self) -> tuple[float, float]:
        return (self.first, self.last)


def writes_all(spec: PatternSpec, data: Mapping[str, Any]) -> bool:
    """Whether every match the matcher finds for `spec` is written as it is: no negation
    drops any later, no after-match skip, no context or consumer query, not read by another
    pattern, no alternation or timed-out partial matches merged under another name."""
    read = {o["type"] for p in data["patterns"] for o in p["operands"]}
    return not (spec.negated or spec.name in data.get("after_match", {}) or spec.name in read
                or spec.reported_as or spec.timed_out or data.get("contexts")
                or data.get("covering"))


def job_from_json(data: Mapping[str, Any]) -> Job:
    """Read and check the job data; `SpecError` if it is not a job this runtime can run."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise SpecError(f"not a cepplan job (expected \"format\": \"{FORMAT}\")")
    options = data.get("options", {})
    seq_ties = options.get("seq_ties", "strict")
    if seq_ties not in ("strict", "allow"):
        raise SpecError(f"seq_ties must be strict or allow, not {seq_ties!r:.40}")
    patterns = tuple(pattern_from_json(p, seq_ties=seq_ties,
                                       kleene_cap=options.get("kleene_cap", 16))
                     for p in data["patterns"])
    types = {str(k): tuple(str(a) for a in v) for k, v in data["types"].items()}
    span = data.get("input_span") or (-math.inf, math.inf)
    sizes = match_bytes(patterns)
    patterns = tuple(replace(p, match_bytes=sizes[p.name], writes_all=writes_all(p, data))
                     for p in patterns)
    stages = {p.name: compile_pattern(p) for p in patterns}
    names = {p.name for p in patterns}
    for spec in patterns:
        stages[spec.name].contiguous = contiguous_pairs(spec, stages[spec.name], types, names)
    return Job(patterns, stages, types, data, (float(span[0]), float(span[1])))


def needed_attributes(job: Job, spec: PatternSpec) -> list[str]:
    """The attribute columns a pattern's matcher reads or outputs."""
    attrs: list[str] = []
    for operand in spec.operands:
        for attr in job.types.get(operand.type, ()):
            if attr not in attrs:
                attrs.append(attr)
    attrs += [k for k in spec.partition_by if k not in attrs]
    if any(job.is_complex(o.type) for o in spec.operands):
        attrs.append(MATCH_COLUMN)
    if zoned_times(job.data):
        attrs.append(EVENT_ZONE)
    return attrs


def pattern_table(frame: pd.DataFrame | Columns, job: Job, spec: PatternSpec) -> Table:
    """A partition's events as the pattern's matcher reads them, with the stamp standing for
    the events between contiguous variables when the reader gave it (`contiguity`)."""
    attributes = needed_attributes(job, spec)
    stamp = timeline_column(spec.partition_by)
    if job.stages[spec.name].contiguous and stamp in frame.columns:
        attributes.append(stamp)
    if spec.window_events is not None:  # the count window's clock (`positions`)
        attributes.append(position_column(spec.partition_by))
    return make_table(frame, with_rows(frame, attributes))


def zoned_times(data: Mapping[str, Any]) -> bool:
    """Whether the job's input writes times with a zone offset (`source.time_format`), so
    that its events carry the offset (`EVENT_ZONE`) to write their times back in."""
    pattern = ((data.get("reader") or {}).get("source") or {}).get("time_format")
    return bool(pattern) and has_zone(pattern)


@dataclass
class Rendering:
    """Matches not rendered yet: the renderer over their table, their pattern, and the
    matches (one `Matches` per operand group, none empty)."""

    renderer: Renderer
    spec: PatternSpec
    results: list[Matches]

    def arrays(self) -> list[pa.ChunkedArray]:
        """Each `Matches` as JSON lines, one Arrow string each (`Renderer.match_array`)."""
        return [self.renderer.match_array(self.spec, m) for m in self.results]


def _joined(arrays: list[pa.ChunkedArray]) -> pa.ChunkedArray:
    return pa.chunked_array([c for a in arrays for c in a.chunks], pa.large_string())


@dataclass
class PartitionOutput:
    """What one partition of one pattern produced: its matches, how many, the matches as
    complex events when asked, the Kleene enumerations cut by the cap, the partial matches
    the matcher built per join prefix length (empty when not counted) and the matches held
    back (`Matches.held_back`). The matches are kept as found (`found`) and rendered in the
    form the writer asks for: JSON lines (`matches`, rendered once) or typed rows (`rows`);
    an output made from text (the context stage's) has only `lines`. `splits` counts the
    pieces its join steps were split into beyond the first (`Matches.splits`)."""

    lines: str | pa.ChunkedArray | None
    count: int
    complex: pd.DataFrame | None
    cap_hits: int
    partials: list[int] = field(default_factory=list)
    held_back: int = 0
    found: Rendering | None = None
    splits: int = 0

    @property
    def matches(self) -> str | pa.ChunkedArray:
        """The matches as JSON lines (one match object per line, each line ending in a
        newline): one string, or Arrow strings, one line each."""
        if self.lines is None:
            self.lines = _joined(self.found.arrays())
        return self.lines

    def texts(self) -> list[str]:
        """One JSON text per match."""
        if not self.count:
            return []
        if isinstance(self.matches, str):
            return self.matches.split("\n")[:-1]
        return [text[:-1] for text in self.matches.to_pylist()]

    def rows(self, layout: PatternColumns) -> Iterator[pa.RecordBatch]:
        """The matches as record batches of the pattern's Parquet layout, a chunk at a time
        (`match_rows`): from the matches as found, else from their JSON text."""
        if not self.count:
            return
        if self.found is None:
            yield from text_rows(layout, self.texts())
            return
        for found in self.found.results:
            yield from table_rows(layout, self.found.renderer.table, found)


def evaluate_partition(frame: pd.DataFrame | Columns, job: Job, spec: PatternSpec, *,
                       own: tuple[float, float] = (-math.inf, math.inf),
                       with_complex: bool = False,
                       chunk_events: int = CHUNK_EVENTS,
                       texts: EventTexts | None = None) -> PartitionOutput:
    """Match one pattern over one partition's events (canonical columns); `texts`: the
    event texts of the pool the frame was taken from (its `ROW_COLUMN`), if shared."""
    table = pattern_table(frame, job, spec)
    partials: list[int] = []
    results = match_partition(table, spec, job.stages[spec.name], own=own,
                              chunk_events=chunk_events, partials=partials, span=job.span)
    out = rendered(Renderer(table, job.types, texts), spec, results, with_complex)
    out.partials = partials
    return out


def evaluate_pieces(frame: pd.DataFrame | Columns, job: Job, spec: PatternSpec, *,
                    own: tuple[float, float] = (-math.inf, math.inf),
                    with_complex: bool = False,
                    texts: EventTexts | None = None) -> Iterator[PartitionOutput]:
    """`evaluate_partition` piece by piece (`match_pieces`): each piece's matches rendered
    when found, in output order, never gathered for the partition; the last output carries
    the partial matches built and no match."""
    table = pattern_table(frame, job, spec)
    renderer = Renderer(table, job.types, texts)
    partials: list[int] = []
    for _, piece in match_pieces(table, spec, job.stages[spec.name], own=own,
                                 partials=partials, span=job.span):
        yield rendered(renderer, spec, [piece], with_complex)
    yield PartitionOutput("", 0, None, 0, partials=partials)


def rendered(renderer: Renderer, spec: PatternSpec, results: list[Matches],
             with_complex: bool) -> PartitionOutput:
    """A partition's output from its matches, rendered when the writer asks (JSON lines or
    typed rows); when asked, the matches as complex events (rendered as JSON lines now:
    their text travels with them)."""
    held, splits = sum(m.held_back for m in results), sum(m.splits for m in results)
    results = [m for m in results if m.count]
    out = PartitionOutput(None, sum(m.count for m in results), None,
                          sum(m.cap_hits for m in results), held_back=held, splits=splits,
                          found=Rendering(renderer, spec, results))
    if with_complex and out.count:
        import pandas as pd

        arrays = out.found.arrays()
        out.lines = _joined(arrays)
        parts = [complex_events(renderer.table, spec, m, [t[:-1] for t in array.to_pylist()])
                 for m, array in zip(results, arrays, strict=True)]
        out.complex = pd.concat(parts, ignore_index=True)
    return out


def partitions(frame: pd.DataFrame | Columns, keys: Sequence[str]):
    """The frame split by the pattern's key, groups in order of first appearance; events with
    a missing key value match nothing."""
    if not keys:
        yield frame
        return
    if isinstance(frame, Columns):
        yield from _column_partitions(frame, keys)
        return
    for _, group in frame.dropna(subset=list(keys)).groupby(list(keys), sort=False):
        yield group


def _column_partitions(frame: Columns, keys: Sequence[str]):
    """`partitions` of NumPy columns without pandas (`key_codes`), one stable sort, then the
    rows of each group (a pandas frame per group cost more than matching a small group)."""
    codes = key_codes(frame, keys)
    rows = np.flatnonzero(codes >= 0)
    order = rows[np.argsort(codes[rows], kind="stable")]
    plain = frame.take(slice(None))  # the type column as strings once, not once per group
    sizes = np.bincount(codes[rows])
    for group in np.split(order, np.cumsum(sizes)[:-1]):
        if len(group):
            yield plain.take(group)
