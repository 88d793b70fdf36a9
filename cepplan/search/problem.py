"""The evaluation search's input: each pattern's positive variables with workload-wide labels,
rates, conditions and window (seed 004 §2), built from a workload and its statistics.

A label names what a variable binds independently of the variable's name: its event type,
kind (plain or Kleene), filters, Kleene-internal predicates and partition key, with every
variable name replaced by a placeholder. Two patterns can share a subpattern exactly when
their variables' labels, the structure and the conditions among them (also label-rewritten)
agree — so `a.price > b.price` in one pattern matches `x.price > y.price` in another.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from cepplan.costmodels.join_orders import (
    JoinCondition,
    JoinWork,
    by_steps,
    cheapest,
)
from cepplan.costmodels.keyed import tree_factors
from cepplan.costmodels.markov import event_probability
from cepplan.costmodels.trees import kleene_rate, no_event_probability, node_cost
from cepplan.workload.expr.bounds import Bound, bounds_of
from cepplan.workload.model import (
    FILTER,
    KLEENE,
    KLEENE_INTERNAL,
    NEGATED,
    Pattern,
    Statistics,
    Workload,
)

MAX_VARIABLES = 12  # the subset DP is 3^m: larger patterns keep their own order, unshared


@dataclass(frozen=True)
class Condition:
    """A join condition: the variables it reads, its label-rewritten text, its selectivity."""

    variables: frozenset[str]
    key: str
    selectivity: float
    # the (variable, attribute) look-ups it narrows in the matcher (`workload.expr.bounds`)
    narrows: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class SearchPattern:
    """One pattern as the evaluation search sees it (positive variables in position order)."""

    name: str
    operator: str  # SEQ or AND
    window: float
    variables: tuple[str, ...]
    labels: Mapping[str, str]
    rates: Mapping[str, float]  # effective rates (Kleene: subsets, docs/sharing.md)
    conditions: tuple[Condition, ...] = ()
    negation_cost: float = 0.0  # the veto node on top of the root (constant across plans)
    # each Kleene variable's rate of single events, whose effective rate depends on the window
    kleene: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    kleene_cap: int = 16
    # a bounded Kleene variable's fewest and most events (None: no most), Kleene+'s (1, None)
    repetition: Mapping[str, tuple[int, int | None]] = field(
        default_factory=lambda: MappingProxyType({}))
    # a strict Kleene variable's partition rate: its sets are runs of back-to-back events
    back_to_back: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # a partitioned pattern's κ(S): partial matches within keys over the unkeyed C(S)
    cooccurrence: Mapping[frozenset[str], float] = field(
        default_factory=lambda: MappingProxyType({}))

    @property
    def seq(self) -> bool:
        return self.operator == "SEQ"

    def rates_at(self, window: float) -> Mapping[str, float]:
        """The effective rates within another window (a shared node keeps its widest user's
        window): a Kleene variable's subsets grow with the window, plain rates do not."""
        if window == self.window or not self.kleene:
            return self.rates
        return {**self.rates, **{var: kleene_rate(rate, window, self.kleene_cap,
                                                  *self.repetition.get(var, (1, None)),
                                                  self.back_to_back.get(var))
                                 for var, rate in self.kleene.items()}}

    def join_work(self, orders: Iterable[Sequence[str]]) -> JoinWork:
        """Of these join orders, the one whose look-ups read the fewest rows in the matcher,
        priced (`costmodels.join_orders`, with these rates and selectivities)."""
        return cheapest(orders, self.window, self.rates, self._join_conditions(), self.seq,
                        self.cooccurrence)

    def step_work(self, steps: Sequence[Sequence[str]]) -> JoinWork:
        """The cheapest order joining `steps` one after the other (`join_orders.by_steps`)."""
        return by_steps(tuple(tuple(step) for step in steps), self.window, self.rates,
                        self._join_conditions(), self.seq, self.cooccurrence)

    def _join_conditions(self) -> list[JoinCondition]:
        return [JoinCondition(c.variables, c.selectivity, c.narrows) for c in self.conditions]

    @property
    def selectivities(self) -> dict[frozenset[str], float]:
        product: dict[frozenset[str], float] = {}
        for condition in self.conditions:
            product[condition.variables] = product.get(condition.variables, 1.0) * \
                condition.selectivity
        return product


@dataclass(frozen=True)
class Problem:
    """The patterns to plan and, by name, those left in their own order with the reason."""

    patterns: tuple[SearchPattern, ...]
    skipped: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Sets of patterns that can run at the same time (grouped context windows, seed 003
    # §5.3): two patterns may share a subtree only if one set holds both. Empty: all may.
    together: tuple[frozenset[str], ...] = ()

    def may_share(self, first: str, second: str) -> bool:
        """Whether two patterns are ever evaluated at the same time."""
        return not self.together or any(first in s and second in s for s in self.together)


class SearchOutOfTime(Exception):
    """The time limit passed before the search had a multitree to return."""


def problem_from_workload(workload: Workload, statistics: Statistics,
                          together: tuple[frozenset[str], ...] = (),
                          deadline: float = math.inf) -> Problem:
    """Every SEQ/AND pattern over primitive events becomes a `SearchPattern`; OR patterns,
    patterns over complex events and very large ones are skipped (with the reason).
    `together`: the sets of patterns that can run at the same time (`Problem.together`);
    SearchOutOfTime once `deadline` (a `time.perf_counter()` time) has passed."""
    patterns, skipped = [], {}
    for pattern in workload.patterns:
        if time.perf_counter() > deadline:
            raise SearchOutOfTime(f"preparing {len(workload.patterns):,} patterns")
        reason = _unplannable(pattern)
        if reason:
            skipped[pattern.name] = reason
            continue
        patterns.append(_search_pattern(pattern, workload, statistics))
    return Problem(tuple(patterns), MappingProxyType(skipped), together)


def search_pattern(pattern: Pattern, workload: Workload,
                   statistics: Statistics) -> SearchPattern | None:
    """One pattern as `problem_from_workload` prices it; None where it skips the pattern."""
    return None if _unplannable(pattern) else _search_pattern(pattern, workload, statistics)


def _unplannable(pattern: Pattern) -> str | None:
    if pattern.operator == "OR":
        return "OR pattern: each operand matches alone"
    if any(o.is_complex for o in pattern.operands):
        return "binds complex events"
    if pattern.window is None:
        return "no window"
    if len(pattern.positive) > MAX_VARIABLES:
        return f"more than {MAX_VARIABLES} variables"
    return None


def _unshared(pattern: Pattern) -> list[str]:
    """What keeps a count-window pattern's leaves its own: its window is checked on its
    partition's positions, which no other pattern's node checks (docs/sharing.md)."""
    return ["count window", pattern.name] if pattern.window_events else []


def _search_pattern(pattern: Pattern, workload: Workload, statistics: Statistics) -> SearchPattern:
    window = float(pattern.window)
    cap = workload.options.kleene_cap
    selectivity = statistics.selectivities.get(pattern.name, {})
    labels, rates, kleene, rate_of, repetition, back_to_back = {}, {}, {}, {}, {}, {}
    partition_rate = sum(_rate(statistics, t) for t in _partition_types(pattern))
    seen: dict[str, int] = {}
    for operand in sorted(pattern.positive, key=lambda o: o.position):
        var = operand.var
        own = [p for p in pattern.predicates if p.variables == {var}
               and p.kind in (FILTER, KLEENE_INTERNAL)]
        text = json.dumps([operand.event_type, operand.kind, list(pattern.partition_by),
                           sorted(_rewrite(p.portable, {var: "_"}) for p in own),
                           *_unshared(pattern)])
        seen[text] = seen.get(text, 0) + 1
        labels[var] = f"{text}#{seen[text]}"  # a second a:GOOG is a different leaf
        rate = rate_of[var] = _rate(statistics, operand.event_type)
        for p in own:
            rate *= selectivity.get(p.text, 1.0)
        rates[var] = rate
        if operand.kind == KLEENE:
            repetition[var] = (operand.min_count, operand.max_count)
            if operand.consecutive:
                back_to_back[var] = partition_rate
            kleene[var], rates[var] = rate, kleene_rate(rate, window, cap, *repetition[var],
                                                        back_to_back.get(var))
    positives = {o.var for o in pattern.positive}
    kinds = {o.var: workload.attributes_of(o.event_type) for o in pattern.positive}
    conditions = tuple(
        Condition(p.variables, _rewrite(p.portable, labels), selectivity.get(p.text, 1.0),
                  narrowed_look_ups(p.portable, p.variables, kinds))
        for p in pattern.predicates if len(p.variables) > 1 and p.variables <= positives)
    variables = tuple(o.var for o in sorted(pattern.positive, key=lambda o: o.position))
    keyed = statistics.keyed.get(pattern.name) if pattern.partition_by else None
    factors = {} if keyed is None else tree_factors(
        keyed, window, rates, {o.var: (o.event_type, rates[o.var] / rate_of[o.var]
                                       if rate_of[o.var] else 0.0)
                               for o in pattern.positive if o.var not in kleene},
        {v: (cap, *repetition[v]) for v in kleene}, pattern.operator == "SEQ")
    searched = SearchPattern(pattern.name, pattern.operator, window, variables,
                             MappingProxyType(labels), MappingProxyType(rates), conditions,
                             kleene=MappingProxyType(kleene), kleene_cap=cap,
                             repetition=MappingProxyType(repetition),
                             back_to_back=MappingProxyType(back_to_back),
                             cooccurrence=MappingProxyType(factors))
    return replace(searched, negation_cost=_negation_cost(pattern, searched, statistics))


def _partition_types(pattern: Pattern) -> frozenset[str]:
    """The event types of a strict pattern's partition: those its hidden strict negations
    (`workload.strategies`) forbid between two of its events."""
    return frozenset(o.event_type for o in pattern.negated if o.var.startswith("__strict_"))


def narrowed_look_ups(tree: list, variables: frozenset[str],
                      kinds: Mapping[str, Mapping[str, str]]) -> frozenset[tuple[str, str]]:
    """The (variable, attribute) pairs whose join look-up a condition narrows: a number's by
    any bound, another attribute's (a string's) by `==` alone, as the matcher looks them up
    (`kinds`: each variable's attribute types)."""
    def looked_up(var: str, bound: Bound) -> bool:
        kind = "double" if bound.attr == "ts" else kinds[var].get(bound.attr)
        return kind in ("long", "double") or (kind == "string" and bound.exact
                                               and bound.size is None)

    return frozenset((v, b.attr) for v in variables for b in bounds_of(tree, v)
                     if looked_up(v, b))


def _negation_cost(pattern: Pattern, searched: SearchPattern, statistics: Statistics) -> float:
    """The veto node: complete positive matches that survive every negated variable."""
    if not pattern.negated:
        return 0.0
    root = node_cost(searched.variables, searched.window, searched.rates,
                     searched.selectivities, searched.seq, searched.cooccurrence)
    positions = [o.position for o in pattern.positive]
    survive = 1.0
    for operand in pattern.negated:
        if operand.kind != NEGATED:
            continue
        edge = operand.position < min(positions) or operand.position > max(positions)
        survive *= no_event_probability(_rate(statistics, operand.event_type),
                                        searched.window, pattern.operator,
                                        len(positions), edge)
    return root * survive


def _rate(statistics: Statistics, type_name: str) -> float:
    """Events per time unit: the measured rate, else the occurrence model's."""
    if type_name in statistics.rates:
        return float(statistics.rates[type_name])
    model = statistics.models.get(type_name)
    if model is None:
        return 1.0
    step = model.time_step or 1.0
    if model.kind == "markov" and model.transition:
        return event_probability(model.transition) / step
    return (model.p or 0.0) / step


def _rewrite(tree: list, names: Mapping[str, str]) -> str:
    """A portable expression tree as text with variable names replaced (labels)."""
    def walk(node: object) -> object:
        if not isinstance(node, list) or not node:
            return node
        if node[0] == "attr":
            return ["attr", names.get(node[1], node[1]), node[2]]
        if node[0] == "kleene":
            return ["kleene", node[1], names.get(node[2], node[2]), node[3]]
        if node[0] == "lit":
            return node
        head = node[:2] if node[0] == "call" else node[:1]
        return [*head, *(walk(child) for child in node[len(head):])]
    return json.dumps(walk(tree), sort_keys=True)

