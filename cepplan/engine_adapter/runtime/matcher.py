"""Recomputation-based matching of one pattern over one partition (seed 001, Algorithm 1).

Only events are held (the partition's table, in the total order); nothing is kept between
evaluations. The table is walked in chunks of trigger events: for a chunk, the matches whose
latest event (the trigger, seed 001 §2.3 step 2) lies in the chunk are recomputed from the
events of the chunk and the window before it, so the working set is linear in the events of a
window plus the chunk. Per chunk:

1. join (seed 001 §2.3 step 2): the positive variables in the plan's order, each look-up a
   vectorised time-range search (`searchsorted` + range expansion) bounded by the window, the
   SEQ order and the chunk; a Kleene variable joins through its last event; join predicates
   filter as soon as their variables are bound;
2. Kleene+ (step 3): each Kleene variable's other events by bitmask enumeration
   (`kleene_stage`, over `kleene`);
3. negation (seed 002 §2.2, `negation`): a match is dropped when an event of a negated
   variable satisfying its predicates lies in the gap its position defines — between the
   neighbouring positive operands in a SEQ (start: from the window's start; end: up to the
   window's end), anywhere in the window for AND. A match no event blocks but whose gap reaches
   outside the time the input covers (`span`: its first to its last event) is held back, not
   reported: the input never showed that the negation holds there (docs/matching.md,
   "Semantics").

Each join step, Kleene+ expansion and negation test builds at most a row budget of rows at
once (`memory.row_budget`): past it, its rows are split into consecutive pieces, each followed
through the rest of the pattern before the next (`pieces`), so the matches come out piece by
piece in the unsplit order (`match_pieces`). Every step that builds rows checks first, from
the counts in hand, that they fit the memory budget (`memory`): only a piece that cannot be
split further (one row's Kleene subsets) can pass it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from cepplan.engine_adapter.runtime import lookup, memory
from cepplan.engine_adapter.runtime.contiguity import timeline_column
from cepplan.engine_adapter.runtime.gaps import GapStage, adjacent_checks, join_gaps
from cepplan.engine_adapter.runtime.kleene_stage import KleeneStage
from cepplan.engine_adapter.runtime.lookup import SlicedIndex, narrowed_pieces, slice_size
from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.negation import NegationStage
from cepplan.engine_adapter.runtime.pieces import range_pieces, row_batches
from cepplan.engine_adapter.runtime.positions import position_column
from cepplan.engine_adapter.runtime.spec import OperandSpec, PatternSpec, PredicateSpec, Stages
from cepplan.engine_adapter.runtime.table import Table, expand
from cepplan.engine_adapter.runtime.text_codes import ABSENT, TextCodes
from cepplan.workload.expr.bounds import Bound, bounds_of
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

CHUNK_EVENTS = 4096


def match_partition(table: Table, spec: PatternSpec, stages: Stages, *,
                    own: tuple[float, float] = (-math.inf, math.inf),
                    chunk_events: int = CHUNK_EVENTS,
                    partials: list[int] | None = None,
                    span: tuple[float, float] = (-math.inf, math.inf)) -> list[Matches]:
    """All matches of `spec` in one partition whose latest event's timestamp lies in `own`
    (the time range this partition owns; matches outside it belong to a neighbour), gathered:
    one `Matches` per operand group, the whole pattern for SEQ/AND, each operand for OR
    (`match_pieces` for the other arguments)."""
    groups = 1 if spec.operator != "OR" else len(spec.positive)
    found: list[list[Matches]] = [[] for _ in range(groups)]
    for group, piece in match_pieces(table, spec, stages, own=own, chunk_events=chunk_events,
                                     partials=partials, span=span, gathering=True):
        found[group].append(piece)
    return [Matches.joined(parts) for parts in found]


def match_pieces(table: Table, spec: PatternSpec, stages: Stages, *,
                 own: tuple[float, float] = (-math.inf, math.inf),
                 chunk_events: int = CHUNK_EVENTS,
                 partials: list[int] | None = None,
                 span: tuple[float, float] = (-math.inf, math.inf),
                 gathering: bool = False) -> Iterator[tuple[int, Matches]]:
    """The matches of `spec` in one partition whose latest event's timestamp lies in `own`,
    piece by piece in their output order, each with its operand group's index (the whole
    pattern for SEQ/AND; for OR, each operand's matches before the next's). `span`: the time
    the input covers (`Job.span`); matches it cannot decide are held back. With a `partials`
    list, adds the partial matches built per join prefix (`_count_partials`). `gathering`:
    the caller holds the pieces (counted against the memory budget)."""
    context = MatchContext(table, spec, stages)
    context.partials = partials
    context.span = span
    context.gathering = gathering
    groups = [(o,) for o in spec.positive] if spec.operator == "OR" else [spec.positive]
    n = len(table)
    owned = [start for start in range(0, n, chunk_events)
             if table.ts[start] < own[1] and table.ts[min(n, start + chunk_events) - 1] >= own[0]]
    for index, group in enumerate(groups):
        for start in owned:
            for piece in context.chunk(group, start, min(n, start + chunk_events), own):
                yield index, piece
    if context.splits > context.splits_reported:  # splits whose pieces had no match
        yield 0, Matches(splits=context.splits - context.splits_reported)


def passing(table: Table, ranks: np.ndarray, filters: list) -> np.ndarray:
    """The ranks among `ranks` whose events pass every one of an operand's `filters`."""
    for tree in filters:
        columns = {key: table.column(key[1])[ranks] for key in referenced_keys(tree)}
        ranks = ranks[np.asarray(evaluate(tree, columns, len(ranks)), dtype=bool)]
    return ranks


class MatchContext(KleeneStage, NegationStage, GapStage):
    """One pattern over one table: candidate events per variable and the stage functions
    (the join here, Kleene+, negation and the negations checked in the join in their own
    modules)."""

    partials: list[int] | None = None  # distinct partial matches per join prefix length
    own: tuple[float, float] = (-math.inf, math.inf)  # the owned range of the current chunk
    span: tuple[float, float] = (-math.inf, math.inf)  # the time the input covers
    gathering: bool = True  # the caller holds every match until the partition is done
    splits = splits_reported = 0  # pieces made beyond the first per step; those reported

    def __init__(self, table: Table, spec: PatternSpec, stages: Stages):
        self.table = table
        self.spec = spec
        self.stages = stages
        self.window = spec.reach
        # the window's clock: positions in the partition for a count window, else time
        self.clock = (table.columns[position_column(spec.partition_by)]
                      if spec.window_events is not None else table.ts)
        self.seq = spec.operator == "SEQ"
        self.strict = spec.seq_ties == "strict"
        self.held = 0  # bytes the partition's matches found so far will take (`memory`)
        self.indexes: dict[tuple[str, str, int], SlicedIndex] = {}  # (var, attr, slice size)
        self.bound_cache: dict[tuple, list[Bound]] = {}
        self.text = TextCodes(table)  # text attributes' codes, for look-ups on `==`
        order = [v for v in spec.order if spec.operand(v).kind != "negated"]
        stamp = timeline_column(spec.partition_by)
        pairs = stages.contiguous if stamp in table.columns else {}
        self.previous = table.columns[stamp] if pairs else None
        stamped = frozenset(v for group in pairs.values() for v in group)
        self.adjacent = adjacent_checks(pairs, order)
        self.gaps = join_gaps(spec, stages, order, stamped)
        self.gapped = stamped | {gap.var for gaps in self.gaps.values() for gap in gaps}
        self.by_type: dict[str, np.ndarray] = {}
        self.gap_stamps: dict[str, np.ndarray] = {}
        self.cands = {o.var: np.empty(0, dtype=np.int64) if o.var in stamped
                      else self._candidates(o) for o in spec.operands}

    def _candidates(self, operand: OperandSpec) -> np.ndarray:
        """Ranks of the events of the operand's type that pass its filters (seed 001 step 1)."""
        filters = (self.stages.negation_filters if operand.kind == "negated"
                   else self.stages.filters).get(operand.var, [])
        return passing(self.table, self._of_type(operand.type), filters)

    def _of_type(self, type_name: str) -> np.ndarray:
        """Ranks of the table's events of one type (found once per type)."""
        if type_name not in self.by_type:
            self.by_type[type_name] = np.flatnonzero(self.table.types == type_name)
        return self.by_type[type_name]

    # -- one chunk ------------------------------------------------------------------------

    def chunk(self, operands: tuple[OperandSpec, ...], start: int, stop: int,
              own: tuple[float, float]) -> Iterator[Matches]:
        """Matches over `operands` whose latest event has a rank in [start, stop), in
        pieces (`join_pieces`, `kleene`), in order."""
        self.own = own
        for rows in self.join_pieces(operands, start, stop):
            latest = np.max(np.vstack(list(rows.values())), axis=0)
            keep = (latest >= start) & (self.table.ts[latest] >= own[0]) & (
                self.table.ts[latest] < own[1])
            rows = {v: a[keep] for v, a in rows.items()}
            if not len(next(iter(rows.values()))):
                continue
            for matches in self.kleene(operands, rows):
                for operand in self.spec.negated:
                    if operand.var not in self.gapped:
                        matches = self.negation(operand, operands, matches)
                matches = self.decided(operands, matches)
                if self.gathering:
                    self.held += matches.count * self.match_bytes(len(operands))
                matches.splits, self.splits_reported = (self.splits - self.splits_reported,
                                                        self.splits)
                yield matches

    def budget(self, width: int) -> int:
        """The most rows of `width` events one piece builds (`memory.row_budget`)."""
        return memory.row_budget(width)

    def match_bytes(self, width: int) -> int:
        """One match of `width` variables as held until written (`memory.match_bytes`)."""
        return self.spec.match_bytes or width * memory.MATCH_BYTES

    def expand(self, low: np.ndarray, high: np.ndarray, width: int,
               what: str = "partial matches") -> tuple[np.ndarray, np.ndarray]:
        """`table.expand`, once the rows it builds (`width` events each, with their index
        arrays; as matches, when they bind every positive variable) are known to fit the
        memory budget with the matches held."""
        self._check_rows(int(np.maximum(high - low, 0).sum()), width, what)
        return expand(low, high)

    def _check_rows(self, rows: int, width: int, what: str) -> None:
        """`rows` new rows of `width` events fit the memory budget with the matches held."""
        per_row = (width + 1) * memory.JOIN_BYTES
        if width == len(self.spec.positive):
            per_row = max(per_row, self.match_bytes(width))
        memory.check(self.spec.name, self.spec.window_events or self.spec.window,
                     self.held + rows * per_row, rows, what, self.spec.window_unit)

    def join(self, operands: tuple[OperandSpec, ...], start: int,
             stop: int) -> dict[str, np.ndarray]:
        """`join_pieces` gathered: every row at once ({} when there is none)."""
        parts = list(self.join_pieces(operands, start, stop))
        return {v: np.concatenate([p[v] for p in parts]) for v in parts[0]} if parts else {}

    def join_pieces(self, operands: tuple[OperandSpec, ...], start: int,
                    stop: int) -> Iterator[dict[str, np.ndarray]]:
        """Bind every positive variable (a Kleene one by its last event) in the plan's order,
        each step in pieces of at most `budget` rows (`pieces`), the rows in the order one
        piece would give them."""
        table = self.table
        order = [v for v in self.spec.order if v in {o.var for o in operands}]
        last_position = max(o.position for o in operands)
        operand = self.spec.operand(order[0])
        cand = self.cands[operand.var]
        cand_ts = table.ts[cand]
        low = np.searchsorted(self.clock[cand], self.clock[start] - self.window, "left")
        if self.seq and operand.position == last_position:
            low = max(low, self._not_before_chunk(cand, cand_ts, start))
        rows = {operand.var: cand[low:np.searchsorted(cand, stop, "left")]}
        pending = [p for p in self.stages.joins if p.variables <= set(order)]
        yield from self._joined(rows, order[1:], pending, (start, stop, last_position))

    def _joined(self, rows: dict[str, np.ndarray], later: list[str], pending: list,
                bounds: tuple[int, int, int]) -> Iterator[dict[str, np.ndarray]]:
        """The rows, filtered by the join predicates their variables bind, joined with the
        `later` variables one step at a time, each step's expansion split into pieces of at
        most `budget` rows followed through the next steps one after the other."""
        start, stop, last_position = bounds
        ready = [p for p in pending if p.variables <= set(rows)]
        pending = [p for p in pending if not p.variables <= set(rows)]
        for pred in ready:
            rows = filter_rows(rows, self._holds_on_rows(pred.tree, rows))
        if self.partials is not None:
            self._count_partials(rows, start)
        if not len(next(iter(rows.values()))):
            return
        if not later:
            yield rows
            return
        operand = self.spec.operand(later[0])
        cand = self.cands[operand.var]
        cand_ts = self.table.ts[cand]
        low, high = self._ranges(rows, operand, cand, cand_ts, stop, last_position, start)
        low, high = self.gap_bounds(rows, operand, cand_ts, low, high)
        for count, (part, which, positions) in enumerate(
                self._look_up(rows, operand, pending, low, high)):
            self.splits += count > 0
            piece = {v: a[part] for v, a in rows.items()} if count or part.stop < len(low) \
                else rows
            yield from self._joined(self._bind(piece, operand, cand, which, positions),
                                    later[1:], pending, bounds)

    def _look_up(self, rows: dict[str, np.ndarray], operand: OperandSpec, pending: list,
                 low: np.ndarray, high: np.ndarray
                 ) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """The candidates of `operand` each row joins, in pieces of at most `budget` rows:
        (the rows' slice, row within it, candidate position). Narrowed by the `pending`
        predicates its binding makes ready where they bound one of its attributes
        (`lookup`), else every candidate of the row's range [low, high)."""
        width = len(rows) + 1
        few = int(np.maximum(high - low, 0).sum()) <= memory.MIN_PIECE_ROWS
        budget = memory.MIN_PIECE_ROWS if few else self.budget(width)  # one piece either way
        narrowing = self._narrowing(rows, operand, pending, low, high)
        if narrowing is None:
            for part, lows, highs in range_pieces(low, high, budget):
                yield part, *self.expand(lows, highs, width)
            return
        index, rank_low, rank_high, counts = narrowing
        for part, which, positions in narrowed_pieces(index, low, high, rank_low, rank_high,
                                                      counts, budget):
            self._check_rows(len(which), width, "partial matches")
            yield part, which, positions

    def _narrowing(self, rows: dict[str, np.ndarray], operand: OperandSpec, pending: list,
                   low: np.ndarray, high: np.ndarray):
        """The sliced index of `operand`'s candidates on the attribute whose bounds (from the
        ready predicates) keep the fewest of them, each row's value ranks and how many
        candidates each row finds; None when no predicate bounds an attribute (a number by
        any bound, a text by `==`), the ranges are short or the bounds keep most of them
        (`lookup.MIN_RANGE`, `MAX_SHARE`)."""
        spans = np.maximum(high - low, 0)
        total = int(spans.sum())
        if not len(spans) or total < lookup.MIN_RANGE * len(spans):
            return None
        bound = set(rows) | {operand.var}
        found: dict[str, list[Bound]] = {}
        for pred in pending:
            if pred.variables <= bound:
                for one in self._bounds(pred, operand.var):
                    found.setdefault(one.attr, []).append(one)
        size = slice_size(total / len(spans))
        best = None
        for attr, bounds in found.items():
            ranks = self._value_ranks(operand.var, attr, bounds, rows, size, len(spans))
            if ranks is None:
                continue
            index, rank_low, rank_high = ranks
            counts = np.zeros(len(spans), dtype=np.int64)
            for part in row_batches(index.work(low, high), self.budget(len(rows) + 1)):
                counts[part] = index.counts(low[part], high[part], rank_low[part],
                                            rank_high[part])
            if best is None or counts.sum() < best[3].sum():
                best = index, rank_low, rank_high, counts
        if best is None or best[3].sum() > lookup.MAX_SHARE * total:
            return None
        return best

    def _value_ranks(self, var: str, attr: str, bounds: list[Bound],
                     rows: dict[str, np.ndarray], size: int, length: int):
        """The sliced index of `var`'s candidates on `attr` and per row the ranks [low, high)
        of the values its bounds allow; None when they cannot narrow on `attr`: a text
        attribute bounded only otherwise than by `==` of a value, a number by a bound that
        is not one."""
        if self.table.column(attr).dtype.kind in "iuf":
            lower, upper = self._value_range(bounds, rows, length)
            if lower is None:
                return None
        else:
            equal = [b for b in bounds if b.exact and b.size is None]
            if not equal or self.text.column(attr) is None:
                return None
            lower = upper = self._text_value(equal, rows, length).astype(np.float64)
        index = self._index(var, attr, size)
        return index, *index.rank_ranges(lower, upper)

    def _text_value(self, equal: list[Bound], rows: dict[str, np.ndarray],
                    length: int) -> np.ndarray:
        """Per row, the code (`text_codes`) of the text its `==` bounds give the attribute;
        `ABSENT` where two of them differ (no candidate equals both)."""
        codes = None
        for one in equal:
            tree = one.tree
            read = tree[0] == "attr" or (tree[0] == "kleene" and tree[1] == "LAST")
            coded = self.text.column(tree[-1]) if read else None
            if coded is not None:  # a plain read of a text column: its codes, no evaluation
                found = coded[rows[tree[-2]]]
            else:
                value = evaluate(tree, self._row_columns(tree, rows), length)
                found = self.text.of(np.broadcast_to(np.asarray(value, dtype=object), length))
            codes = found if codes is None else np.where(codes == found, codes, ABSENT)
        return codes

    def _bounds(self, pred: PredicateSpec, var: str) -> list[Bound]:
        """`lookup.bounds_of` for one predicate and variable, worked out once."""
        key = (id(pred.tree), var)
        if key not in self.bound_cache:
            self.bound_cache[key] = bounds_of(pred.tree, var)
        return self.bound_cache[key]

    def _value_range(self, bounds: list[Bound], rows: dict[str, np.ndarray], length: int
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Per row, the values [lower, upper] the bounds allow (as doubles, widened by the
        rounding of terms moved across; a bound that is not a number does not narrow)."""
        lower, upper = np.full(length, -np.inf), np.full(length, np.inf)
        for one in bounds:
            value = np.asarray(evaluate(one.tree, self._row_columns(one.tree, rows), length))
            if value.dtype.kind not in "iuf":
                return None, None
            value = value.astype(np.float64)
            if one.size is not None:
                size = np.asarray(evaluate(one.size, self._row_columns(one.size, rows),
                                           length), dtype=np.float64)
                value = value - lookup.ROUNDING * (1 + size) if one.lower \
                    else value + lookup.ROUNDING * (1 + size)
            if one.lower:
                lower = np.maximum(lower, np.where(np.isnan(value), -np.inf, value))
            else:
                upper = np.minimum(upper, np.where(np.isnan(value), np.inf, value))
        return lower, upper

    def _index(self, var: str, attr: str, size: int) -> SlicedIndex:
        """The sliced index of `var`'s candidates on `attr` (a text one on its codes), built
        once per slice size."""
        key = (var, attr, size)
        if key not in self.indexes:
            coded = self.text.column(attr)
            values = self.table.column(attr) if coded is None else coded
            self.indexes[key] = SlicedIndex(values[self.cands[var]].astype(np.float64), size)
        return self.indexes[key]

    def _count_partials(self, rows: dict[str, np.ndarray], start: int) -> None:
        """Count the prefix's partial matches (its variables bound, the conditions among them
        applied) whose latest event is in this chunk and owned: each is built again by the
        chunks whose window reaches back to it, but counted once (docs/matching.md)."""
        latest = np.maximum.reduce(list(rows.values()))
        stamps = self.table.ts[latest]
        owned = (latest >= start) & (stamps >= self.own[0]) & (stamps < self.own[1])
        self.partials.extend([0] * (len(rows) - len(self.partials)))
        self.partials[len(rows) - 1] += int(np.count_nonzero(owned))

    def _extend(self, rows: dict[str, np.ndarray], operand: OperandSpec, cand: np.ndarray,
                cand_ts: np.ndarray, stop: int, last_position: int, start: int,
                pending: list) -> dict[str, np.ndarray]:
        """Join one more variable, every row at once: per row, the candidates allowed by
        window and order, narrowed by the `pending` predicates its binding makes ready."""
        low, high = self._ranges(rows, operand, cand, cand_ts, stop, last_position, start)
        width = len(rows) + 1
        narrowing = self._narrowing(rows, operand, pending, low, high)
        if narrowing is None:
            return self._bind(rows, operand, cand, *self.expand(low, high, width))
        index, rank_low, rank_high, counts = narrowing
        self._check_rows(int(counts.sum()), width, "partial matches")
        return self._bind(rows, operand, cand, *index.pairs(low, high, rank_low, rank_high))

    def _ranges(self, rows: dict[str, np.ndarray], operand: OperandSpec, cand: np.ndarray,
                cand_ts: np.ndarray, stop: int, last_position: int,
                start: int) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the range [low, high) of `cand` allowed by window and order."""
        stamps, clock = np.vstack([self.clock[a] for a in rows.values()]), self.clock[cand]
        low = np.searchsorted(clock, stamps.max(axis=0) - self.window, "left")
        high = np.searchsorted(clock, stamps.min(axis=0) + self.window, "right")
        high = np.minimum(high, np.searchsorted(cand, stop, "left"))
        if self.seq:
            before = [rows[v] for v in rows if self.spec.operand(v).position < operand.position]
            after = [rows[v] for v in rows if self.spec.operand(v).position > operand.position]
            low, high = self._order_bounds(low, high, cand, cand_ts, before, after)
            if operand.position == last_position:
                low = np.maximum(low, self._not_before_chunk(cand, cand_ts, start))
        return low, high

    def _bind(self, rows: dict[str, np.ndarray], operand: OperandSpec, cand: np.ndarray,
              which: np.ndarray, positions: np.ndarray) -> dict[str, np.ndarray]:
        """The rows `which` joined with `operand`'s candidates at `positions`, distinct
        events."""
        rows = {v: a[which] for v, a in rows.items()}
        rows[operand.var] = cand[positions]
        same = [v for v in rows if v != operand.var
                and self.spec.operand(v).type == operand.type]
        if same:
            distinct = np.ones(len(positions), dtype=bool)
            for v in same:
                distinct &= rows[v] != rows[operand.var]
            rows = filter_rows(rows, distinct)
        return rows

    def _not_before_chunk(self, cand: np.ndarray, cand_ts: np.ndarray, start: int):
        """Where the last SEQ operand's candidates may start for a chunk beginning at rank
        `start`: strict, it is the match's latest event, so its rank is in the chunk; with
        ties allowed it only shares the latest event's timestamp, which is >= ts[start]."""
        if self.strict:
            return np.searchsorted(cand, start, "left")
        return np.searchsorted(cand_ts, self.table.ts[start], "left")

    def _order_bounds(self, low: np.ndarray, high: np.ndarray, cand: np.ndarray,
                      cand_ts: np.ndarray, before: list[np.ndarray],
                      after: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Tighten candidate ranges so that events `before` precede and `after` follow:
        strictly smaller timestamps, or with ties allowed non-decreasing ones (whatever the
        row order within one timestamp; distinct events are enforced by the callers)."""
        side_low, side_high = ("right", "left") if self.strict else ("left", "right")
        if before:
            latest = np.max(np.vstack([self.table.ts[b] for b in before]), axis=0)
            low = np.maximum(low, np.searchsorted(cand_ts, latest, side_low))
        if after:
            earliest = np.min(np.vstack([self.table.ts[a] for a in after]), axis=0)
            high = np.minimum(high, np.searchsorted(cand_ts, earliest, side_high))
        return low, high

    def _holds_on_rows(self, tree: list, rows: dict[str, np.ndarray]) -> np.ndarray:
        """A join predicate on every row, Kleene variables read through their last event."""
        length = len(next(iter(rows.values())))
        return np.asarray(evaluate(tree, self._row_columns(tree, rows), length), dtype=bool)

    def _row_columns(self, tree: list, rows: dict[str, np.ndarray]) -> dict[tuple, np.ndarray]:
        """The columns a tree reads over the rows, Kleene variables by their last event."""
        columns = {}
        for key in referenced_keys(tree):
            var, attr = (key[0], key[1]) if len(key) == 2 else (key[1], key[2])
            columns[key] = self.table.column(attr)[rows[var]]
        return columns

def partials_per_window(counts: list[int], window: float, span: float) -> float:
    """Partial matches alive in one window, from the counts per prefix length over a stream
    of `span` time units: a partial match of k events is built when its latest arrives, at
    k·C/W per time unit for C alive per window (docs/sharing.md), so C = n_k·W/(span·k)."""
    return sum(n * window / (span * k) for k, n in enumerate(counts, start=1)) if span else 0.0


def filter_rows(rows: dict[str, np.ndarray], keep: np.ndarray) -> dict[str, np.ndarray]:
    return {v: a[keep] for v, a in rows.items()}
