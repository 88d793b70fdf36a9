"""The stepwise heuristics of seed 002 §3.2.2, merged into one Pareto set.

Forward: start from the minimum-latency plan (one step, fastest option per subevent) and
repeatedly apply the move that lowers cost most — move a subevent to a later (possibly new)
step, or switch a complex subevent to a cheaper option — while the latency bound holds.
Backward: start from the minimum-cost plan (one subevent per step, in increasing cost ×
occurrence frequency, cheapest options) and repeatedly apply the latency-lowering move that
costs least per step saved — move a subevent to an earlier (possibly new) step, or switch to a
faster option — until no move lowers latency. Every plan visited is kept; the merge keeps the
Pareto-optimal ones. Each iteration tries O(n²) moves, each evaluated in O(n²). With a
deadline, each heuristic stops where it is when its share of the time is spent (forward gets
the first half), keeping what it visited: the best plans found so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from cepplan.costmodels.occurrence import trigger_intensity
from cepplan.costmodels.operators import PatternModel, positive_part
from cepplan.planner.candidates import Candidate, Option, evaluate, pareto_front

Steps = tuple[frozenset[str], ...]


def solve(model: PatternModel, options: Mapping[str, Sequence[Option]],
          max_latency: int | None = None, deadline: float | None = None) -> list[Candidate]:
    """Pareto front of the plans both heuristics visit (positive subevents only, costed on
    the positive part of the model as the DP does; negation is added by the caller), by the
    `time.perf_counter()` deadline when one is given."""
    model = positive_part(model)
    names = [o.var for o in sorted(model.positives, key=lambda o: o.position)]
    pos_options = {v: options[v] for v in names}
    halfway = None if deadline is None else (time.perf_counter() + deadline) / 2
    visited = _forward(model, names, pos_options, max_latency, halfway)
    visited += _backward(model, names, pos_options, deadline)
    return pareto_front(visited)


def _until(moves: Iterator[Candidate], deadline: float | None) -> Iterator[Candidate]:
    """The moves, cut off at the deadline (the caller then keeps what it has)."""
    for move in moves:
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeoutError
        yield move


def _forward(model: PatternModel, names: list[str], options: Mapping[str, Sequence[Option]],
             max_latency: int | None, deadline: float | None = None) -> list[Candidate]:
    choices = {v: min(range(len(options[v])), key=lambda i: (options[v][i].latency,
                                                              options[v][i].cost))
               for v in names}
    current = evaluate(model, (frozenset(names),), options, choices)
    visited = [current]
    while True:
        try:
            moves = [c for c in _until(_neighbours(model, current, options, later=True),
                                       deadline)
                     if c.cost < current.cost - 1e-15
                     and (max_latency is None or c.latency <= max_latency)]
        except TimeoutError:
            return visited
        if not moves:
            return visited
        current = min(moves, key=lambda c: (c.cost, c.latency))
        visited.append(current)


def _backward(model: PatternModel, names: list[str], options: Mapping[str, Sequence[Option]],
              deadline: float | None = None) -> list[Candidate]:
    choices = {v: min(range(len(options[v])), key=lambda i: (options[v][i].cost,
                                                              options[v][i].latency))
               for v in names}

    def weight(var: str) -> float:
        occurrence = model.operand(var).occurrence
        return options[var][choices[var]].cost * trigger_intensity(occurrence, model.window)

    order = sorted(names, key=weight)
    current = evaluate(model, tuple(frozenset([v]) for v in order), options, choices)
    visited = [current]
    while True:
        try:
            moves = [c for c in _until(_neighbours(model, current, options, later=False),
                                       deadline)
                     if c.latency < current.latency]
        except TimeoutError:
            return visited
        if not moves:
            return visited
        current = min(moves, key=lambda c: (max(0.0, c.cost - current.cost)
                                            / (current.latency - c.latency), c.cost))
        visited.append(current)


def _neighbours(model: PatternModel, plan: Candidate, options: Mapping[str, Sequence[Option]],
                later: bool) -> Iterator[Candidate]:
    """Plans one move away: a subevent moved later (or earlier), or one option switched."""
    def build(steps: Steps, choices: Mapping[str, int]) -> Candidate:
        return evaluate(model, steps, options, choices)

    yield from _moved(plan.steps, later, lambda steps: build(steps, plan.choices))
    for var, current in plan.choices.items():
        for index, opt in enumerate(options[var]):
            now = options[var][current]
            if index != current and ((later and opt.cost < now.cost)
                                     or (not later and opt.latency < now.latency)):
                yield build(plan.steps, {**plan.choices, var: index})


def _moved(steps: Steps, later: bool, build: Callable[[Steps], Candidate]) -> Iterator[Candidate]:
    """Every plan with one subevent moved to another existing step or to a new step placed
    later (forward) or earlier (backward) than its own."""
    for i, step in enumerate(steps):
        for var in step:
            rest = [set(s) for s in steps]
            rest[i].discard(var)
            targets = range(i + 1, len(steps)) if later else range(0, i)
            for t in targets:
                moved = [set(s) for s in rest]
                moved[t].add(var)
                yield build(_clean(moved))
            for gap in (range(i + 1, len(steps) + 1) if later else range(0, i + 1)):
                if not rest[i] and gap in (i, i + 1):
                    continue
                moved = [set(s) for s in rest]
                moved.insert(gap, {var})
                yield build(_clean(moved))


def _clean(steps: list[set[str]]) -> Steps:
    return tuple(frozenset(s) for s in steps if s)
