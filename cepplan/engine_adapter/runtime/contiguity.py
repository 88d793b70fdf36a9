"""Contiguity ("no event of the partition between x and y", the `strict` strategy) without the
partition's other events: each event stamped, as it is read, with the latest earlier
timestamp of its partition (`Timeline`), so that y immediately follows x exactly when
y's stamp is at most x's timestamp (nothing lies strictly between them).

The loader writes `strict` as one hidden negation per event type between x and y
(`workload.strategies`); `contiguous_pairs` finds such groups in any pattern — negations
between two consecutive plain variables, with no condition but the gap's own ends, together
covering every primitive type that can share the pattern's key. Where the events carry the
stamp (`timeline_column`), those negations' events are not tagged for the matchers (the
stamp stands for them) and the matcher bounds the join by it (`gaps`); without it they are
ordinary negations. The types no other variable reads are read for their timestamps and keys
alone (`stamp_only`): the reader converts their rows' attributes but copies none of them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from cepplan.engine_adapter.runtime.spec import PLAIN, PatternSpec, Stages
from cepplan.engine_adapter.runtime.table import Columns, key_codes
from cepplan.workload.columns import EVENT_TS

PREFIX = "__previous_ts:"  # not an attribute name: attributes are identifiers


def timeline_column(keys: Sequence[str]) -> str:
    """The column holding each event's partition's latest earlier timestamp (`keys`: the
    partition's attributes; none: the whole input is one partition)."""
    return PREFIX + ",".join(keys)


def contiguous_pairs(spec: PatternSpec, stages: Stages, types: Mapping[str, Sequence[str]],
                     complex_types: Collection[str]) -> dict[tuple[str, str], frozenset[str]]:
    """Per pair of consecutive plain variables (x, y) of a SEQ that no event of the partition
    may separate, the negated variables saying so (module doc)."""
    if spec.operator != "SEQ":
        return {}
    keyed = {t for t, attrs in types.items()
             if t not in complex_types and all(k in attrs for k in spec.partition_by)}
    positives = sorted(spec.positive, key=lambda o: o.position)
    out = {}
    for x, y in pairwise(positives):
        if x.kind != PLAIN or y.kind != PLAIN:
            continue
        between = [n for n in spec.negated if x.position < n.position < y.position
                   and n.type in keyed and _only_ends(stages, n.var, x.var, y.var,
                                                      spec.seq_ties == "allow")]
        if keyed and keyed <= {n.type for n in between}:
            out[(x.var, y.var)] = frozenset(n.var for n in between)
    return out


def _only_ends(stages: Stages, var: str, x: str, y: str, ties: bool) -> bool:
    """Whether negated `var` has no condition but the gap's ends, both exclusive: any event
    of its type strictly between x's and y's timestamps blocks."""
    if stages.negation_filters.get(var):
        return False
    trees = [p.tree for p in stages.negations.get(var, [])]
    ends = [["<", ["attr", x, "ts"], ["attr", var, "ts"]],
            ["<", ["attr", var, "ts"], ["attr", y, "ts"]]]
    said = [any(_same_comparison(t, end) for t in trees) for end in ends]
    return all(any(_same_comparison(t, end) for end in ends) for t in trees) and (
        all(said) or not ties)


def _same_comparison(tree: list, less: list) -> bool:
    """Whether `tree` is the comparison `less` (`a < b`), written either way round."""
    return tree == less or tree == [">", less[2], less[1]]


class Timeline:
    """Each partition's latest timestamps read so far, stamping events read in time order
    with their partition's latest earlier timestamp (`timeline_column`; -inf: none before,
    NaN: a key value missing, in no partition)."""

    def __init__(self, keys: Sequence[str]):
        self.keys = tuple(keys)
        self.column = timeline_column(keys)
        self.numbers: dict[tuple, int] = {}  # key values -> partition number
        self.last = np.empty(0)  # per partition: its latest timestamp so far
        self.before_last = np.empty(0)  # and the latest one before that

    def stamp(self, frame: Columns, timing: Columns | None = None,
              handed: np.ndarray | None = None) -> None:
        """Add the column to a batch whose events come after (or at) every event before;
        with `timing` (timestamps and keys of a batch's events, the frame's rows among them
        where `handed` says), stamped among those events."""
        events = frame if timing is None else timing
        ts = np.asarray(events[EVENT_TS], dtype=np.float64)
        parts = self._partitions(events)
        out = np.full(len(ts), np.nan)
        rows = np.flatnonzero(parts >= 0)  # in time order: sorted by partition, stably
        order = rows[np.argsort(parts[rows], kind="stable")] if self.keys else rows
        part, stamp = parts[order], ts[order]
        new = np.ones(len(order), dtype=bool)  # each row that starts a (partition, ts) pair
        new[1:] = (part[1:] != part[:-1]) | (stamp[1:] != stamp[:-1])
        pairs = np.flatnonzero(new)
        pair_part, pair_ts = part[pairs], stamp[pairs]
        first = np.ones(len(pairs), dtype=bool)  # the partition's first pair in the batch
        first[1:] = pair_part[1:] != pair_part[:-1]
        previous = np.empty(len(pairs))
        previous[1:] = pair_ts[:-1]
        carried = np.where(self.last[pair_part] == pair_ts, self.before_last[pair_part],
                           self.last[pair_part])
        previous[first] = carried[first]
        out[order] = previous[np.cumsum(new) - 1]
        last = np.ones(len(pairs), dtype=bool)  # the partition's last pair in the batch
        last[:-1] = pair_part[:-1] != pair_part[1:]
        self.before_last[pair_part[last]] = previous[last]
        self.last[pair_part[last]] = pair_ts[last]
        frame.data[self.column] = out if handed is None else out[handed]

    def _partitions(self, frame: Columns) -> np.ndarray:
        """Per row, its partition's number, kept across batches (-1: a key value missing)."""
        if not self.keys:  # one partition
            self.numbers.setdefault((), 0)
            self._grow()
            return np.zeros(len(frame), dtype=np.int64)
        codes = key_codes(frame, self.keys)
        present = np.flatnonzero(codes >= 0)
        firsts = present[np.unique(codes[present], return_index=True)[1]]
        columns = [frame[k] for k in self.keys]
        numbers = np.array([self.numbers.setdefault(tuple(c[r] for c in columns),
                                                    len(self.numbers))
                            for r in firsts.tolist()], dtype=np.int64)
        self._grow()
        out = np.full(len(frame), -1, dtype=np.int64)
        out[present] = numbers[codes[present]] if len(numbers) else out[present]
        return out

    def _grow(self) -> None:
        """Room for the partitions first seen in this batch (nothing read before them)."""
        grown = len(self.numbers) - len(self.last)
        if grown > 0:
            self.last = np.concatenate([self.last, np.full(grown, -np.inf)])
            self.before_last = np.concatenate([self.before_last, np.full(grown, -np.inf)])


def timelines(patterns: Sequence[PatternSpec], stages: Mapping[str, Stages]) -> list[Timeline]:
    """A timeline per partitioning of the patterns with contiguous pairs."""
    keys = dict.fromkeys(p.partition_by for p in patterns if stages[p.name].contiguous)
    return [Timeline(k) for k in keys]


@dataclass(frozen=True)
class StampOnly:
    """The event types no variable reads but stamped ones (`contiguous_pairs`), whose events
    the timelines alone need: read for their timestamps and partition `keys`, not tagged."""

    types: frozenset[str]
    keys: tuple[str, ...]


def stamp_only(patterns: Sequence[PatternSpec], stages: Mapping[str, Stages],
               stamping: Sequence[Timeline]) -> StampOnly:
    """The types only the `stamping` timelines read (none without timelines)."""
    stamped: set[str] = set()
    read: set[str] = set()
    for spec in patterns:
        hidden = set().union(*stages[spec.name].contiguous.values()) if stamping else set()
        for operand in spec.operands:
            (stamped if operand.var in hidden else read).add(operand.type)
    keys = tuple(dict.fromkeys(k for t in stamping for k in t.keys))
    return StampOnly(frozenset(stamped - read), keys)
