"""After-match skips applied to a time range's matches before they are rendered.

When one process matches the first time ranges of a run in time order, each range's matches
of every core pattern are all found before the next range's, and they complete later than
every earlier range's: the skip's order (`runtime.after_match`) is range by range. So each
range's outputs are held unrendered, the skip decided on their match arrays (each partition
key's resume point carried to the next range), the dropped matches left out, and the
outputs written in the order they came. The matches kept are those of the pass over the
written files, which still runs over anything matched elsewhere (worker processes, the
whole-input path): applied again to matches it already kept, the skip keeps them all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from cepplan.engine_adapter.runtime.after_match import (
    Bound,
    SkipArrays,
    SkipRule,
    kept_arrays,
    skip_rules,
    summary,
    summary_arrays,
)
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput, Rendering
from cepplan.engine_adapter.runtime.matches import Matches, ends, select


def match_arrays(matches: Matches, rendering: Rendering, rule: SkipRule) -> SkipArrays:
    """The `SkipArrays` of matches from their ranks (the table's rank order is the events'
    order), not from their JSON text."""
    table, spec = rendering.renderer.table, rendering.spec
    firsts, lasts = ends(spec.positive, matches)
    first = np.minimum.reduce(list(firsts.values()))
    last = np.maximum.reduce(list(lasts.values()))
    resume, after = {"to_next_event": (first, 1), "past_last_event": (last, 1),
                     "to_first": (firsts.get(rule.var), 0),
                     "to_last": (lasts.get(rule.var), 0)}[rule.kind]
    keys = list(zip(*(table.columns[k][first].tolist() for k in rule.partition_by),
                    strict=True)) if rule.partition_by else [()] * matches.count

    def events(row: int) -> list:
        ranks = sorted(r for v in firsts for r in matches.ranks_of(v, row))
        return [(float(table.ts[r]), int(table.ids[r])) for r in ranks]

    return SkipArrays(keys, (table.ts[first], table.ids[first]), (table.ts[last], table.ids[last]),
                      (table.ts[resume], table.ids[resume], np.full(len(first), after)), events)


@dataclass
class RangeSkips:
    """The job's skips over the ranges one process matches in time order: per user pattern,
    each key's resume point, the matches dropped, and the seconds spent deciding."""

    rules: Mapping[str, SkipRule]
    user: Mapping[str, str]  # core pattern -> the name its matches are written under
    bounds: dict[str, dict[tuple, Bound]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def of(cls, job: Job) -> RangeSkips | None:
        rules = {name: rule for name, rule in skip_rules(job.data).items()
                 if not rule.prefer}  # a preference takes matches by start: the file pass
        if not rules:
            return None
        return cls(rules, {s.name: s.output_name for s in job.patterns},
                   {n: {} for n in rules}, dict.fromkeys(rules, 0))

    def applies(self, pattern: str) -> bool:
        return self.user.get(pattern, pattern) in self.rules

    def write(self, writer: Any, held: list[tuple[str, PartitionOutput]]) -> None:
        """One range's outputs, in the order they came, each without the matches its
        pattern's skip drops."""
        clock = time.perf_counter()
        by_name: dict[str, list[int]] = {}
        for index, (pattern, _) in enumerate(held):
            if self.applies(pattern):
                by_name.setdefault(self.user.get(pattern, pattern), []).append(index)
        held = list(held)
        for name, indexes in by_name.items():
            parts = [_arrays(held[i][1], self.rules[name]) for i in indexes]
            keep = iter(kept_arrays([a for part in parts for a in part], self.bounds[name]))
            for index, part in zip(indexes, parts, strict=True):
                mask = np.concatenate([next(keep) for _ in part])
                self.dropped[name] += int(np.count_nonzero(~mask))
                held[index] = (held[index][0], _kept(held[index][1], mask))
        self.seconds += time.perf_counter() - clock
        for pattern, out in held:
            writer.write(pattern, out, skipped=True)


def _arrays(out: PartitionOutput, rule: SkipRule) -> list[SkipArrays]:
    """An output's `SkipArrays`: from its match arrays when it holds them, else its text."""
    if out.found is None or out.lines is not None:
        return [summary_arrays([summary(json.loads(t), rule) for t in out.texts()])]
    return [match_arrays(m, out.found, rule) for m in out.found.results]


def _kept(out: PartitionOutput, mask: np.ndarray) -> PartitionOutput:
    """`out` with the matches where `mask` holds (its other counts unchanged)."""
    count = int(np.count_nonzero(mask))
    if out.found is None or out.lines is not None:
        texts = [t for t, k in zip(out.texts(), mask.tolist(), strict=True) if k]
        return replace(out, lines="".join(t + "\n" for t in texts), count=count, found=None)
    results, start = [], 0
    for matches in out.found.results:
        part = select(matches, mask[start:start + matches.count])
        start += matches.count
        if part.count:
            results.append(part)
    return replace(out, count=count, found=replace(out.found, results=results))


@contextmanager
def skipping(writer: Any) -> Iterator[Any]:
    """The writer one time range's matches go to: the writer itself, or, when it applies
    skips by range (`writer.skips`), a holder whose outputs are written, skipped, at the
    end of the range."""
    skips = getattr(writer, "skips", None)
    if skips is None:
        yield writer
        return
    holder = _RangeHolder()
    yield holder
    skips.write(writer, holder.held)


class _RangeHolder:
    """Collects a range's outputs (`skipping`)."""

    def __init__(self) -> None:
        self.held: list[tuple[str, PartitionOutput]] = []

    def write(self, pattern: str, out: PartitionOutput) -> None:
        if out.count:
            self.held.append((pattern, out))
