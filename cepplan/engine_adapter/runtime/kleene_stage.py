"""Kleene+ (seed 001 §2.3 step 3) for the matcher: each joined row expanded into every valid
subset of each Kleene variable's events, in batches that fit the memory budget (`memory`)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

import numpy as np

from cepplan.engine_adapter.runtime import memory, output_room
from cepplan.engine_adapter.runtime.binding import holds_for
from cepplan.engine_adapter.runtime.kleene import (
    CACHED_GETTERS,
    consecutive_subsets,
    subset_getters,
    subsets,
)
from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.pieces import row_batches
from cepplan.engine_adapter.runtime.spec import KLEENE, OperandSpec
from cepplan.engine_adapter.runtime.table import Table
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

RECENT_RUNS = 4096  # candidate sets whose consecutive subsets `_consecutive` remembers


def _reads_others(pred, var: str) -> bool:
    """Whether a predicate on Kleene variable `var` reads another variable's column."""
    return any(key[-2] != var for key in referenced_keys(pred.tree))


class KleeneStage:
    """The Kleene+ stage of `matcher.MatchContext`, a part of it: reads the context's table,
    pattern and candidates, and its `budget`, `expand`, `match_bytes` and `_order_bounds`."""

    instants: np.ndarray | None = None  # `_instants`, found once per table
    runs: dict[tuple, list[tuple[int, ...]]] | None = None  # `_consecutive`'s recent results
    own_only: dict[str, bool] | None = None  # per Kleene variable: predicates read it alone

    def kleene(self, operands: tuple[OperandSpec, ...],
               rows: dict[str, np.ndarray]) -> Iterator[Matches]:
        """Expand joined rows into matches: every valid subset of each Kleene variable, in
        batches of consecutive rows whose candidate events, then whose subsets, number at
        most `budget` (one row's subsets at once: `_check_subsets` says when they cannot fit)."""
        kleene_ops = [self.spec.operand(v) for v in self.spec.order
                      if v in rows and self.spec.operand(v).kind == KLEENE]
        if not kleene_ops:
            plain = {v: a for v, a in rows.items() if self.spec.operand(v).kind != KLEENE}
            yield Matches(single=plain, count=len(next(iter(rows.values()))))
            return
        budget = self.budget(len(rows))
        cap = max(1, self.spec.kleene_cap)
        ranges = [self._rest_ranges(o, operands, rows) for o in kleene_ops]
        candidates = sum(np.minimum(np.maximum(high - low, 0), self._reach(o, rows))
                         for o, (low, high) in zip(kleene_ops, ranges, strict=True))
        for count, part in enumerate(row_batches(candidates, budget)):
            self.splits += count > 0
            piece = {v: a[part] for v, a in rows.items()}
            per_var = {o.var: self._latest_candidates(o, piece, low[part], high[part])
                       for o, (low, high) in zip(kleene_ops, ranges, strict=True)}
            subsets, events = np.ones(len(piece[kleene_ops[0].var])), len(rows)
            for cands in per_var.values():
                sizes = np.minimum([len(c) for c in cands], cap - 1)
                subsets, events = subsets * np.exp2(sizes), events + sizes / 2
            self._check_output(kleene_ops, subsets, subsets * events)
            for index, batch in enumerate(row_batches(subsets * events / len(rows), budget)):
                self.splits += index > 0
                yield self._subsets(kleene_ops, {v: a[batch] for v, a in piece.items()},
                                    {v: c[batch] for v, c in per_var.items()})

    def _subsets(self, kleene_ops: list[OperandSpec], rows: dict[str, np.ndarray],
                 per_var: dict[str, list[np.ndarray]]) -> Matches:
        """The matches of joined rows: every valid subset of each Kleene variable's
        candidate events `per_var` (per row) with its last event."""
        plain = {v: a for v, a in rows.items() if self.spec.operand(v).kind != KLEENE}
        self._check_subsets(per_var, len(rows))
        bounded = any(o.min_count > 1 or o.max_count for o in kleene_ops)
        if len(kleene_ops) == 1 and not self.stages.masks.get(kleene_ops[0].var) \
                and not bounded and not kleene_ops[0].consecutive:
            return self._every_subset(kleene_ops[0].var, rows, plain, per_var)
        out_rows: list[int] = []
        out_sets: dict[str, list[tuple[int, ...]]] = {o.var: [] for o in kleene_ops}
        cap_hits = 0
        cap = max(1, self.spec.kleene_cap)
        for row in range(len(next(iter(rows.values())))):
            choices = []
            for operand in kleene_ops:
                cands = per_var[operand.var][row]
                if len(cands) + 1 > cap:
                    cap_hits += 1
                    cands = cands[len(cands) - (cap - 1):] if cap > 1 else cands[:0]
                fixed = _row_getter(self.table, rows, row)
                preds = self.stages.masks.get(operand.var, [])
                last = int(rows[operand.var][row])
                found = (self._consecutive(operand.var, cands, last, preds, fixed)
                         if operand.consecutive else
                         subsets(self.table, operand.var, cands, last, preds, fixed))
                choices.append([s for s in found if operand.size_fits(len(s))] if bounded
                               else found)
            for combo in product(*choices):
                if len(combo) > 1 and not self._combo_ok(rows, row, kleene_ops, combo):
                    continue
                out_rows.append(row)
                for operand, chosen in zip(kleene_ops, combo, strict=True):
                    out_sets[operand.var].append(chosen)
        index = np.asarray(out_rows, dtype=np.int64)
        return Matches(single={v: a[index] for v, a in plain.items()}, kleene=out_sets,
                       count=len(index), cap_hits=cap_hits)

    def _consecutive(self, var: str, cands: np.ndarray, last: int, preds: list,
                     fixed) -> list[tuple[int, ...]]:
        """`consecutive_subsets`, remembered for the last `RECENT_RUNS` candidate sets when no
        predicate reads another variable: joined rows differing only in the other variables
        (many under strict contiguity, whose gaps are checked after this stage) share one
        enumeration instead of one NumPy pass each (speed only)."""
        if self.own_only is None:
            self.own_only = {}
        if var not in self.own_only:
            self.own_only[var] = not any(_reads_others(p, var) for p in preds)
        if not self.own_only[var]:
            return consecutive_subsets(self.table, var, cands, last, preds, fixed,
                                       self._instants())
        if self.runs is None or len(self.runs) >= RECENT_RUNS:
            self.runs = {}
        key = (var, last, cands.tobytes())
        found = self.runs.get(key)
        if found is None:
            found = self.runs[key] = consecutive_subsets(self.table, var, cands, last, preds,
                                                         fixed, self._instants())
        return found

    def _instants(self) -> np.ndarray:
        """Per event of the table (in time order), the number of its distinct timestamp."""
        if self.instants is None:
            ts = self.table.ts
            self.instants = np.concatenate([[0], np.cumsum(ts[1:] != ts[:-1])]).astype(np.int64)
        return self.instants

    def _every_subset(self, var: str, rows: dict[str, np.ndarray], plain: dict[str, np.ndarray],
                      per_var: dict[str, list[np.ndarray]]) -> Matches:
        """`kleene` for one Kleene variable without order-dependent predicates: every
        subset of its other candidates (capped), each with its last event; the same
        matches in the same order, without NumPy calls per row (speed only)."""
        cap = max(1, self.spec.kleene_cap)
        counts = np.empty(len(rows[var]), dtype=np.int64)
        sets: list[tuple[int, ...]] = []
        cap_hits = 0
        for row, (cands, last) in enumerate(zip(per_var[var], rows[var].tolist(),
                                                strict=True)):
            if len(cands) + 1 > cap:
                cap_hits += 1
                cands = cands[len(cands) - (cap - 1):] if cap > 1 else cands[:0]
            if len(cands) > CACHED_GETTERS:  # enumerated in blocks, not held as getters
                found = subsets(self.table, var, cands, last, [], _no_fixed)
                sets.extend(found)
                counts[row] = len(found)
                continue
            events = (*cands.tolist(), last)
            getters = subset_getters(len(cands))
            sets.extend([get(events) for get in getters])
            counts[row] = len(getters)
        index = np.repeat(np.arange(len(counts)), counts)
        return Matches(single={v: a[index] for v, a in plain.items()}, kleene={var: sets},
                       count=len(index), cap_hits=cap_hits)

    def _check_output(self, kleene_ops: list[OperandSpec], subsets: np.ndarray,
                      events: np.ndarray) -> None:
        """Where every subset is a match and each match is written (one Kleene variable,
        no order-dependent predicate or size bound, `writes_all`): the piece's matches,
        `subsets` per row of `events` events in all, fit the output's disk (`output_room`)."""
        operand = kleene_ops[0]
        if len(kleene_ops) > 1 or not self.spec.writes_all or operand.consecutive \
                or operand.min_count > 1 or operand.max_count \
                or self.stages.masks.get(operand.var):
            return
        output_room.check(self.spec.name, self.spec.window_events or self.spec.window,
                          self.spec.window_unit, int(subsets.sum()), int(events.sum()),
                          "Kleene matches (every subset of its events, up to "
                          f"options.kleene_cap={self.spec.kleene_cap})")

    def _check_subsets(self, per_var: dict[str, list[np.ndarray]], width: int) -> None:
        """The Kleene subsets about to be enumerated fit the memory budget as matches: per
        row, 2^m of them for m = its Kleene variables' candidates (each capped at cap - 1),
        each carrying about m/2 events besides the match's own."""
        cap = max(1, self.spec.kleene_cap)
        sizes = np.zeros(len(next(iter(per_var.values()))), dtype=np.int64)
        for cands in per_var.values():
            sizes += np.minimum([len(c) for c in cands], cap - 1)
        count = sum(1 << m for m in sizes.tolist())
        events = sum((1 << m) * m for m in sizes.tolist()) // 2
        building = count * self.match_bytes(width) + events * memory.MATCH_BYTES
        memory.check(self.spec.name, self.spec.window_events or self.spec.window,
                     self.held + building, count,
                     f"Kleene matches (every subset of its events, up to options.kleene_cap={cap})",
                     self.spec.window_unit)

    def _rest_ranges(self, operand: OperandSpec, operands: tuple[OperandSpec, ...],
                     rows: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the range of the Kleene variable's candidates that may be its events
        besides its last: earlier than the last, inside the window, after the preceding SEQ
        operands."""
        table = self.table
        cand = self.cands[operand.var]
        cand_ts = table.ts[cand]
        latest = np.max(np.vstack([self.clock[a] for a in rows.values()]), axis=0)
        low = np.searchsorted(self.clock[cand], latest - self.window, "left")
        high = np.searchsorted(cand, rows[operand.var], "left")
        if self.seq:
            before = [rows[o.var] for o in operands if o.position < operand.position]
            low, high = self._order_bounds(low, high, cand, cand_ts, before, [])
        return low, high

    def _reach(self, operand: OperandSpec, rows: dict[str, np.ndarray]) -> int:
        """The latest events of a Kleene variable's range that hold its latest `kleene_cap`
        candidates when no per-event join drops one: the cap, plus one per other variable of
        its type (whose event is excluded)."""
        others = sum(v != operand.var and self.spec.operand(v).type == operand.type
                     for v in rows)
        return max(1, self.spec.kleene_cap) + others

    def _latest_candidates(self, operand: OperandSpec, rows: dict[str, np.ndarray],
                           low: np.ndarray, high: np.ndarray) -> list[np.ndarray]:
        """Per row, the latest `kleene_cap` of `_rest_candidates` (all, when fewer): what
        decides the cap's cut and the cap - 1 enumerated. Looked for among the latest events
        of each range first, further back only for the rows whose joins left too few, so
        that a window of a million events of the type costs O(cap) per row, not a million."""
        cap = max(1, self.spec.kleene_cap)
        found: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(low)
        todo, reach = np.arange(len(low)), self._reach(operand, rows)
        while len(todo):
            start = np.maximum(low[todo], high[todo] - reach)
            part = self._rest_candidates(operand, {v: a[todo] for v, a in rows.items()},
                                         start, high[todo])
            short = [i for i, cands in enumerate(part)
                     if len(cands) < cap and start[i] > low[todo[i]]]
            for row, cands in zip(todo.tolist(), part, strict=True):
                found[row] = cands[-cap:]
            todo, reach = todo[short], reach * 4
        return found

    def _rest_candidates(self, operand: OperandSpec, rows: dict[str, np.ndarray],
                         low: np.ndarray, high: np.ndarray) -> list[np.ndarray]:
        """Per row, the Kleene variable's events besides its last in its range [low, high)
        (`_rest_ranges`) passing the per-event joins, other variables' events excluded."""
        table = self.table
        cand = self.cands[operand.var]
        last = rows[operand.var]
        which, positions = self.expand(low, high, 1, f"candidate events of Kleene {operand.var}")
        events = cand[positions]
        keep = np.ones(len(events), dtype=bool)
        for var, ranks in rows.items():
            if var != operand.var and self.spec.operand(var).type == operand.type:
                keep &= events != ranks[which]
        for pred in self.stages.rest.get(operand.var, []):
            columns = {}
            for key in referenced_keys(pred.tree):
                var, attr = (key[0], key[1]) if len(key) == 2 else (key[1], key[2])
                source = events if (var == operand.var and len(key) == 2) else rows[var][which]
                columns[key] = table.column(attr)[source]
            keep &= np.asarray(evaluate(pred.tree, columns, len(events)), dtype=bool)
        which, events = which[keep], events[keep]
        ends = np.cumsum(np.bincount(which, minlength=len(last))).tolist()
        if not ends:  # as np.split gives it
            return [events]
        return [events[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]  # np.split's
        # pieces, without its two axis swaps per piece (a fifth of Kleene expansion)

    def _combo_ok(self, rows: dict[str, np.ndarray], row: int, kleene_ops: list[OperandSpec],
                  combo: tuple[tuple[int, ...], ...]) -> bool:
        """Several Kleene variables: disjoint events and the predicates reading them together."""
        seen: set[int] = set()
        for chosen in combo:
            if seen & set(chosen):
                return False
            seen |= set(chosen)
        binding = {v: (int(a[row]),) for v, a in rows.items()}
        binding.update({o.var: c for o, c in zip(kleene_ops, combo, strict=True)})
        return all(holds_for(self.table, p.tree, binding, self.spec.kleene_vars)
                   for p in self.stages.combos if p.variables <= set(binding))


def _no_fixed(key: tuple) -> object:
    raise KeyError(key)  # no predicates: no other variable is read


def _row_getter(table: Table, rows: dict[str, np.ndarray], row: int):
    """Values of the other variables (Kleene ones by their last event) in one joined row."""
    def fixed(key: tuple) -> object:
        var, attr = (key[0], key[1]) if len(key) == 2 else (key[1], key[2])
        return table.column(attr)[rows[var][row]]
    return fixed
