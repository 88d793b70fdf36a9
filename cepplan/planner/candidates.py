"""Candidate detection plans of one pattern and their Pareto fronts (seed 002 §3.2.1).

An `Option` is one way to monitor a subevent: a primitive subevent has one (its rate, latency
1); a complex subevent offers the plans its own node propagated (§3.2.3). A `Candidate` is a
plan of the pattern: its steps, the option chosen per variable, its expected cost and latency.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cepplan.costmodels.operators import PatternModel, plan_cost, plan_latency


@dataclass(frozen=True)
class Option:
    """One monitoring plan of a subevent: cost per time unit when monitored continuously,
    latency in steps, and `ref`, the index of the child's plan (-1 for a primitive)."""

    cost: float
    latency: int
    ref: int = -1


@dataclass(frozen=True)
class Candidate:
    """A detection plan of a pattern with the option chosen for each variable."""

    steps: tuple[frozenset[str], ...]
    cost: float
    latency: int
    choices: Mapping[str, int]


def evaluate(model: PatternModel, steps: Sequence[frozenset[str]],
             options: Mapping[str, Sequence[Option]], choices: Mapping[str, int]) -> Candidate:
    """Cost and latency of a plan with the given options (seed 002 §4.1)."""
    costs = {v: options[v][choices[v]].cost for v in options}
    latencies = {v: options[v][choices[v]].latency for v in options}
    steps = tuple(frozenset(s) for s in steps)
    return Candidate(steps, plan_cost(model, steps, costs), plan_latency(model, steps, latencies),
                     dict(choices))


def pareto_front(candidates: Iterable[Candidate], tolerance: float = 1e-12) -> list[Candidate]:
    """The Pareto-optimal plans (Definition 1 of seed 002 §3.2.1), by latency then cost; of
    plans with equal cost and latency the one with fewest steps is kept."""
    ordered = sorted(candidates, key=lambda c: (c.latency, float(f"{c.cost:.12g}"),
                                                len(c.steps)))
    front: list[Candidate] = []
    for cand in ordered:
        if front and cand.cost >= front[-1].cost - tolerance * max(1.0, abs(cand.cost)):
            continue
        front.append(cand)
    return front


def cheapest_within(front: Sequence[Candidate], max_latency: int | None) -> Candidate | None:
    """The root's choice (§3.2.3): the cheapest plan meeting the latency bound, or None."""
    feasible = [c for c in front if max_latency is None or c.latency <= max_latency]
    if not feasible:
        return None
    least = min(c.cost for c in feasible)
    near = [c for c in feasible if not cheaper(least, c.cost)]
    return min(near, key=lambda c: (c.latency, len(c.steps), c.cost))


def cheaper(cost: float, than: float) -> bool:
    """Whether `cost` is lower than `than` beyond the planner's tie (1e-9, relative above a
    cost of 1): costs within it tie, and the tie goes to the fewer steps."""
    return than > cost + 1e-9 * max(1.0, abs(cost))
