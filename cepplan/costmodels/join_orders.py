"""What a join order costs the recomputation matcher: the partial matches each step builds
(memory) and the rows its look-ups read (time), from the rates and selectivities the plan is
priced with (docs/planner.md, "Join orders in the engine").

Seed 004 §3.3 prices an order by its prefixes' partial matches within a window, Cost_ord^k =
C(P_k) (`trees.node_cost`). The matcher (seed 001 §2.3 step 2, and §2.4 "Execution of Joins")
builds step k's rows with one look-up per partial match of P_{k-1}: a nested loop reads every
candidate of the new variable v the window and the SEQ order allow, and the conditions that
become ready filter afterwards,

    read_k = C(P_k) / Π_{conditions ready at k} sel,

unless a ready condition bounds one attribute of v (`workload.expr.bounds`): then the sliced
index reads only the candidates those bounds keep, plus about 2·√(2·r_v·W) index entries per
look-up (docs/matching.md, "Indexed joins"),

    read_k = C(P_k) / Π_{ready, not on that attribute} sel + C(P_{k−1})·2·√(2·r_v·W),

and the matcher takes the cheaper of the two (it counts before it narrows). A partial match of
k events is built when its latest event arrives, k·C/W of them per time unit for C alive per
window (docs/sharing.md), and so is a row read; `JoinWork.per_time_unit` turns the per-window
figures into that rate, the unit the engine's seconds per row multiply.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations, product

from cepplan.costmodels.trees import node_cost


@dataclass(frozen=True)
class JoinCondition:
    """A condition between variables: its selectivity and the (variable, attribute) look-ups
    it narrows (`workload.expr.bounds.bounds_of`)."""

    variables: frozenset[str]
    selectivity: float
    narrows: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class JoinWork:
    """Per step of an order, per window: the partial matches built (Cost_ord^k) and the rows
    its look-up read."""

    order: tuple[str, ...]
    built: tuple[float, ...]
    read: tuple[float, ...]
    window: float
    cross: int = 0  # steps with no condition to the variables before: cross products

    @property
    def rows(self) -> float:
        """Rows read over every step, per window: the order's time."""
        return sum(self.read)

    @property
    def peak(self) -> float:
        """The most rows one step reads per window: what the matcher's pieces must hold."""
        return max(self.read, default=0.0)

    def per_time_unit(self) -> float:
        """Rows read per time unit: a row of k events is read when its latest arrives."""
        return sum(k * r for k, r in enumerate(self.read, start=1)) / self.window


def join_work(order: Sequence[str], window: float, rates: Mapping[str, float],
              conditions: Sequence[JoinCondition], seq: bool,
              factors: Mapping[frozenset[str], float] | None = None) -> JoinWork:
    """The partial matches and rows read per step of `order` (module doc: seed 004 §3.3's
    Cost_ord^k for the built ones, seed 001 §2.4's nested-loop join or the sliced index for the
    rows read)."""
    built, read, cross = [], [], 0
    for k in range(1, len(order) + 1):
        prefix = frozenset(order[:k])
        applied = _selectivities(c for c in conditions if c.variables <= prefix)
        built.append(node_cost(prefix, window, rates, applied, seq, factors))
        if k == 1:
            read.append(built[-1])
            continue
        var = order[k - 1]
        before = [c for c in conditions if c.variables <= prefix - {var}]
        ready = [c for c in conditions if var in c.variables and c.variables <= prefix]
        cross += not ready
        nested = node_cost(prefix, window, rates, _selectivities(before), seq, factors)
        attrs = {a for c in ready for v, a in c.narrows if v == var}
        narrowed = [_narrowed_rows(prefix, window, rates, before, ready, var, attr, seq,
                                   factors) + built[-2] * 2 * math.sqrt(2 * rates[var] * window)
                    for attr in attrs]
        read.append(min([nested, *narrowed]))
    return JoinWork(tuple(order), tuple(built), tuple(read), window, cross)


def _narrowed_rows(prefix: frozenset[str], window: float, rates: Mapping[str, float],
                   before: list[JoinCondition], ready: list[JoinCondition], var: str,
                   attr: str, seq: bool, factors) -> float:
    """Rows a look-up narrowed on `var.attr` keeps: the conditions of that look-up applied."""
    narrowing = [c for c in ready if (var, attr) in c.narrows]
    return node_cost(prefix, window, rates, _selectivities([*before, *narrowing]), seq, factors)


def _selectivities(conditions: Iterable[JoinCondition]) -> dict[frozenset[str], float]:
    """Selectivity per scope, conditions of one scope multiplied (`trees.node_cost`'s input)."""
    out: dict[frozenset[str], float] = {}
    for c in conditions:
        out[c.variables] = out.get(c.variables, 1.0) * c.selectivity
    return out


def cheapest(orders: Iterable[Sequence[str]], window: float, rates: Mapping[str, float],
             conditions: Sequence[JoinCondition], seq: bool,
             factors: Mapping[frozenset[str], float] | None = None) -> JoinWork:
    """The order reading the fewest rows; of equals (conditions of unknown selectivity count
    as 1), the one with the fewest cross products, then the first given."""
    best = None
    for order in orders:
        work = join_work(order, window, rates, conditions, seq, factors)
        if best is None or _fewer(work, best):
            best = work
    if best is None:
        raise ValueError("no join order to price")
    return best


def _fewer(work: JoinWork, best: JoinWork) -> bool:
    """Fewer rows (beyond rounding: products taken in another order), or as many and fewer
    cross products."""
    if math.isclose(work.rows, best.rows, rel_tol=1e-9):
        return work.cross < best.cross
    return work.rows < best.rows


EXHAUSTIVE = 120  # orders priced one by one up to this many; beyond, built greedily


def by_steps(steps: Sequence[Sequence[str]], window: float, rates: Mapping[str, float],
             conditions: Sequence[JoinCondition], seq: bool,
             factors: Mapping[frozenset[str], float] | None = None,
             exhaustive: int = EXHAUSTIVE) -> JoinWork:
    """The cheapest order that joins the steps one after the other (any order within a
    step): every such order priced when there are at most `exhaustive`, else built greedily,
    each next variable of its step the one whose look-up reads the fewest rows."""
    if math.prod(math.factorial(len(s)) for s in steps) <= exhaustive:
        orders = (tuple(v for part in parts for v in part)
                  for parts in product(*(permutations(s) for s in steps)))
        return cheapest(orders, window, rates, conditions, seq, factors)
    order: tuple[str, ...] = ()
    for step in steps:
        left = list(step)
        while left:
            work = cheapest([(*order, v) for v in left], window, rates, conditions, seq,
                            factors)
            order = work.order
            left.remove(order[-1])
    return join_work(order, window, rates, conditions, seq, factors)
