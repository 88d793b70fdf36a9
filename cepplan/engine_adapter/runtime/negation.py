"""Negation (seed 002 §2.2) for the matcher: a match is dropped when an event of a negated
variable passing its predicates lies in the gap its position defines, and held back when that
gap reaches outside the time the input covers (docs/matching.md, "Semantics")."""

from __future__ import annotations

import math

import numpy as np

from cepplan.engine_adapter.runtime.binding import holds_for
from cepplan.engine_adapter.runtime.matches import Matches, ends, select
from cepplan.engine_adapter.runtime.pieces import row_batches
from cepplan.engine_adapter.runtime.spec import OperandSpec, PredicateSpec
from cepplan.workload.expr.vectorized import evaluate, referenced_keys


class NegationStage:
    """The negation stage of `matcher.MatchContext`, a part of it: reads the context's table,
    pattern, candidates and input span, and its `budget`, `expand`, `_check_rows`,
    `_narrowing` and `_order_bounds`."""

    def negation(self, operand: OperandSpec, operands: tuple[OperandSpec, ...],
                 matches: Matches) -> Matches:
        """Drop the matches that an event of negated `operand` blocks (seed 002 §2.2)."""
        if not matches.count:
            return matches
        table = self.table
        firsts, lasts = ends(operands, matches)
        cand = self.cands[operand.var]
        cand_ts = table.ts[cand]
        latest = np.max(np.vstack([self.clock[a] for a in lasts.values()]), axis=0)
        earliest = np.min(np.vstack([self.clock[a] for a in firsts.values()]), axis=0)
        clock = self.clock[cand]  # the window's (`MatchContext.clock`)
        low = np.searchsorted(clock, latest - self.window, "left")
        high = np.searchsorted(clock, earliest + self.window, "right")
        if self.seq:
            before = [lasts[o.var] for o in operands if o.position < operand.position]
            after = [firsts[o.var] for o in operands if o.position > operand.position]
            low, high = self._order_bounds(low, high, cand, cand_ts, before, after)
        blocked = np.zeros(matches.count, dtype=bool)
        what = f"events of negated {operand.var} to test"
        plain = {v: a for v, a in matches.single.items() if v not in matches.kleene}
        narrowing = self._narrowing(plain, operand, self.stages.negations.get(operand.var, []),
                                    low, high)
        spans = np.maximum(high - low, 0) if narrowing is None else narrowing[3]
        for part in row_batches(spans, self.budget(2)):
            if narrowing is None:
                which, positions = self.expand(low[part], high[part], 1, what)
            else:  # only the candidates the negation's bounds keep (`lookup`)
                index, rank_low, rank_high, _ = narrowing
                which, positions = index.pairs(low[part], high[part], rank_low[part],
                                               rank_high[part])
                self._check_rows(len(which), 1, what)
            which += part.start
            events = cand[positions]
            keep = np.ones(len(events), dtype=bool)
            for o in operands:
                if o.type != operand.type:
                    continue
                if o.var in matches.kleene:
                    sets = matches.kleene[o.var]
                    keep &= np.fromiter((e not in sets[w] for e, w in
                                         zip(events, which, strict=True)), bool, len(events))
                else:
                    keep &= events != matches.single[o.var][which]
            for pred in self.stages.negations.get(operand.var, []):
                keep &= self._negation_holds(pred, operand, matches, firsts, lasts, which,
                                             events, keep)
            blocked[which[keep]] = True
        return select(matches, ~blocked)

    def decided(self, operands: tuple[OperandSpec, ...], matches: Matches) -> Matches:
        """The matches whose every negation the input decides: held back (counted) are those
        whose gap before the first positive operand reaches before the input's first event
        (max(ts) - W < start) or after the last one past its last event (min(ts) + W > end);
        an AND's gap is the whole window, so both."""
        if not matches.count or not self.spec.negated or self.span == (-math.inf, math.inf):
            return matches
        positions = [o.position for o in operands]
        edges = [(not self.seq or n.position < min(positions),
                  not self.seq or n.position > max(positions)) for n in self.spec.negated]
        leading, trailing = any(e[0] for e in edges), any(e[1] for e in edges)
        if not (leading or trailing):
            return matches
        firsts, lasts = ends(operands, matches)
        held = np.zeros(matches.count, dtype=bool)
        if leading:
            latest = np.max(np.vstack([self.table.ts[a] for a in lasts.values()]), axis=0)
            held |= latest - self.window < self.span[0]
        if trailing:
            earliest = np.min(np.vstack([self.table.ts[a] for a in firsts.values()]), axis=0)
            held |= earliest + self.window > self.span[1]
        if not held.any():
            return matches
        out = select(matches, ~held)
        out.held_back += int(np.count_nonzero(held))
        return out

    def _negation_holds(self, pred: PredicateSpec, operand: OperandSpec, matches: Matches,
                        firsts: dict, lasts: dict, which: np.ndarray, events: np.ndarray,
                        alive: np.ndarray) -> np.ndarray:
        """A negated variable's predicate for each (match, candidate) pair."""
        per_event_kleene = any(pred.uses[v] & {"plain", "NEXT", "PREV"}
                               for v in pred.variables if v in matches.kleene)
        if per_event_kleene:
            out = np.zeros(len(events), dtype=bool)
            for i in np.flatnonzero(alive):
                binding = {v: matches.ranks_of(v, int(which[i]))
                           for v in pred.variables if v != operand.var}
                binding[operand.var] = (int(events[i]),)
                out[i] = holds_for(self.table, pred.tree, binding, self.spec.kleene_vars)
            return out
        columns = {}
        for key in referenced_keys(pred.tree):
            var, attr = (key[0], key[1]) if len(key) == 2 else (key[1], key[2])
            if var == operand.var:
                source = events
            elif len(key) == 3 and key[0] == "FIRST":
                source = firsts[var][which]
            else:
                source = lasts[var][which]
            columns[key] = self.table.column(attr)[source]
        return np.asarray(evaluate(pred.tree, columns, len(events)), dtype=bool)
