"""A SEQ negation between two plain variables checked inside the join, as a sorted search.

`NOT n` between consecutive positive variables x and y blocks a match when an event of n
passing its predicates lies in the gap between x's and y's timestamps (docs/matching.md,
"Semantics"). When the join binds the later of x and y (its `closer`) with every variable n's
predicates read already bound, that is a bound on the closer's candidate range, not a join
followed by an anti-join: binding y, the first such event after x caps y's timestamp (y
must not come after it); binding x, the last one before y floors x's. The selection
strategies `next` and `strict` are such negations (`workload.strategies`), so a `next` y is
found as the first event after x meeting y's conditions, and a `strict` one no later than
the next event of the partition.

The gap's ends: exclusive under `seq_ties: strict`; with ties allowed, exclusive where a
predicate says so (`n.ts > x.ts`, `n.ts < y.ts`, as the strategies' rewrite writes them),
else inclusive. A gap is checked here only when its upper end is exclusive (y and the events
after it are never in it) and, if its lower end is inclusive, every variable of n's type up
to x is bound (a match's own events never block it); other negations stay in the negation
stage after the join.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from cepplan.engine_adapter.runtime.spec import (
    PLAIN,
    OperandSpec,
    PatternSpec,
    PredicateSpec,
    Stages,
)
from cepplan.engine_adapter.runtime.table import expand
from cepplan.workload.expr.vectorized import evaluate, referenced_keys


@dataclass(frozen=True)
class Gap:
    """One negation checked in the join: negated `var` between `before` and `after`, at the
    join step binding `closer` (one of them); `predicates` are its own, less the ones the
    gap's ends stand for; `lower_open`: an event at x's timestamp is outside the gap."""

    var: str
    type: str
    before: str
    after: str
    closer: str
    predicates: tuple[PredicateSpec, ...]
    lower_open: bool


def join_gaps(spec: PatternSpec, stages: Stages, order: list[str],
              stamped: frozenset[str] = frozenset()) -> dict[str, list[Gap]]:
    """Per positive variable, the negations checked when the join (in `order`) binds it
    (but those in `stamped`, which the events' stamps stand for: `contiguity`)."""
    if spec.operator != "SEQ":
        return {}
    positives = sorted(spec.positive, key=lambda o: o.position)
    step = {v: i for i, v in enumerate(order)}
    out: dict[str, list[Gap]] = {}
    for negated in (n for n in spec.negated if n.var not in stamped):
        before = [o for o in positives if o.position < negated.position]
        after = [o for o in positives if o.position > negated.position]
        if not before or not after:
            continue
        gap = _gap(spec, stages, negated, before[-1], after[0], positives, step)
        if gap is not None:
            out.setdefault(gap.closer, []).append(gap)
    return out


def adjacent_checks(pairs: Collection[tuple[str, str]], order: list[str]
                    ) -> dict[str, list[tuple[str, str]]]:
    """Per positive variable, the contiguous pairs (x, y) the join checks when it binds it:
    the later of the two in `order`."""
    out: dict[str, list[tuple[str, str]]] = {}
    for x, y in pairs:
        out.setdefault(max((x, y), key=order.index), []).append((x, y))
    return out


def _gap(spec: PatternSpec, stages: Stages, negated: OperandSpec, x: OperandSpec,
         y: OperandSpec, positives: list[OperandSpec], step: dict[str, int]) -> Gap | None:
    """The negation as a join-time gap check, or None when it must wait for the match."""
    if x.kind != PLAIN or y.kind != PLAIN or x.var not in step or y.var not in step:
        return None
    ties = spec.seq_ties == "allow"
    lower_open = upper_open = not ties
    rest = []
    for pred in stages.negations.get(negated.var, []):
        if _compares_ts(pred.tree, negated.var, y.var):
            upper_open = True
        elif _compares_ts(pred.tree, x.var, negated.var):
            lower_open = True
        else:
            rest.append(pred)
    closer = max((x, y), key=lambda o: step[o.var])
    bound = {v for v, i in step.items() if i < step[closer.var]}
    readable = {o.var for o in positives if o.kind == PLAIN} & bound
    if not upper_open or any(p.variables - {negated.var} - readable or
                             p.uses[negated.var] != {"plain"} for p in rest):
        return None
    if not lower_open and any(o.type == negated.type and o.var not in bound
                              for o in positives if o.position <= x.position):
        return None
    return Gap(negated.var, negated.type, x.var, y.var, closer.var, tuple(rest), lower_open)


def _compares_ts(tree: list, earlier: str, later: str) -> bool:
    """Whether `tree` is `earlier.ts < later.ts` (or `later.ts > earlier.ts`)."""
    if not isinstance(tree, list) or len(tree) != 3 or tree[0] not in ("<", ">"):
        return False
    left, right = (tree[1], tree[2]) if tree[0] == "<" else (tree[2], tree[1])
    return left == ["attr", earlier, "ts"] and right == ["attr", later, "ts"]


class GapStage:
    """The join-time negation checks of `matcher.MatchContext`, a part of it: reads the
    context's table, pattern, candidates, `gaps`, `adjacent`, `previous` and `budget`."""

    gaps: dict[str, list[Gap]]
    adjacent: dict[str, list[tuple[str, str]]]  # closer -> contiguous pairs (`contiguity`)
    previous: np.ndarray | None  # each event's partition's latest earlier timestamp
    gap_stamps: dict[str, np.ndarray]  # negated variable -> its candidates' timestamps

    def gap_bounds(self, rows: dict[str, np.ndarray], operand: OperandSpec, cand_ts: np.ndarray,
                   low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`operand`'s candidate ranges [low, high) narrowed by the gaps its binding closes:
        binding y, at most the timestamp of the first blocking event after x; binding x,
        at least that of the last one before y."""
        cand = self.cands[operand.var]
        for x, y in self.adjacent.get(operand.var, ()):  # y's stamp at most x's timestamp
            if operand.var == y:
                high = np.minimum(high, np.searchsorted(self.previous[cand],
                                                        self.table.ts[rows[x]], "right"))
            else:
                low = np.maximum(low, np.searchsorted(cand_ts, self.previous[rows[y]], "left"))
        for gap in self.gaps.get(operand.var, ()):
            live = np.flatnonzero(high > low)
            if not len(live):
                break
            if not len(self.cands[gap.var]):  # nothing can block
                continue
            if gap.closer == gap.after:
                stamp = self._first_blocking(gap, rows, live, cand_ts[high[live] - 1])
                high[live] = np.minimum(high[live], np.searchsorted(cand_ts, stamp, "right"))
            else:
                stamp = self._last_blocking(gap, rows, live, cand_ts[low[live]])
                side = "left" if gap.lower_open else "right"
                low[live] = np.maximum(low[live], np.searchsorted(cand_ts, stamp, side))
        return low, high

    def _first_blocking(self, gap: Gap, rows: dict[str, np.ndarray], live: np.ndarray,
                        latest: np.ndarray) -> np.ndarray:
        """Per live row, the timestamp of the first event of the gap's variable after x
        that passes its predicates (inf: none before `latest`, the latest y allowed)."""
        stamps = self._stamps(gap.var)
        after_x = self.table.ts[rows[gap.before][live]]
        start = np.searchsorted(stamps, after_x, "right" if gap.lower_open else "left")
        stop = np.maximum(start, np.searchsorted(stamps, latest, "left"))
        found = self._search(gap, rows, live, start, stop, 1)
        return np.where(found >= 0, stamps[np.maximum(found, 0)], np.inf)

    def _last_blocking(self, gap: Gap, rows: dict[str, np.ndarray], live: np.ndarray,
                       earliest: np.ndarray) -> np.ndarray:
        """Per live row, the timestamp of the last event of the gap's variable before y
        that passes its predicates (-inf: none from `earliest`, the earliest x allowed)."""
        stamps = self._stamps(gap.var)
        before_y = np.searchsorted(stamps, self.table.ts[rows[gap.after][live]], "left")
        first = np.minimum(before_y, np.searchsorted(stamps, earliest, "left"))
        found = self._search(gap, rows, live, before_y - 1, first - 1, -1)
        return np.where(found >= 0, stamps[np.maximum(found, 0)], -np.inf)

    def _stamps(self, var: str) -> np.ndarray:
        """The timestamps of a negated variable's candidates, gathered once per table."""
        if var not in self.gap_stamps:
            self.gap_stamps[var] = self.table.ts[self.cands[var]]
        return self.gap_stamps[var]

    def _search(self, gap: Gap, rows: dict[str, np.ndarray], live: np.ndarray,
                start: np.ndarray, stop: np.ndarray, direction: int) -> np.ndarray:
        """Per live row, the first candidate position from `start` towards `stop`
        (exclusive) in `direction` (+1 or -1) that blocks the row (-1: none), read in
        blocks doubling in size (galloping): the work is about the distance walked."""
        found = np.full(len(live), -1, dtype=np.int64)
        budget = self.budget(2)
        at = start.copy()
        active = np.flatnonzero((stop - at) * direction > 0)
        size = 4
        while len(active):
            ends = at[active] + direction * size
            ends = np.minimum(ends, stop[active]) if direction > 0 else np.maximum(
                ends, stop[active])
            which, offsets = expand(np.zeros(len(active), dtype=np.int64),
                                    (ends - at[active]) * direction)
            positions = at[active][which] + direction * offsets
            hit = self._blocks(gap, rows, live[active[which]], positions)
            first_hit, index = np.unique(which[hit], return_index=True)
            found[active[first_hit]] = positions[hit][index]
            at[active] = ends
            done = np.zeros(len(active), dtype=bool)
            done[first_hit] = True
            active = active[~done & ((stop[active] - ends) * direction > 0)]
            size = min(size * 2, max(4, budget // max(1, len(active))))
        return found

    def _blocks(self, gap: Gap, rows: dict[str, np.ndarray], which: np.ndarray,
                positions: np.ndarray) -> np.ndarray:
        """Whether the gap variable's candidates at `positions` block rows `which`: not an
        event of the row and passing the gap's predicates."""
        events = self.cands[gap.var][positions]
        keep = np.ones(len(events), dtype=bool)
        for var, ranks in rows.items():
            if self.spec.operand(var).type == gap.type:
                keep &= events != ranks[which]
        for pred in gap.predicates:
            columns = {}
            for key in referenced_keys(pred.tree):
                source = events if key[0] == gap.var else rows[key[0]][which]
                columns[key] = self.table.column(key[1])[source]
            keep &= np.asarray(evaluate(pred.tree, columns, len(events)), dtype=bool)
        return keep
