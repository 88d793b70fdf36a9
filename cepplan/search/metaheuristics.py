"""Simulated annealing and tabu search over multitrees (seed 004 §4.2, App. B), anytime:
both stop at a deadline (or after `patience` neighbours evaluated without improvement) and
hand back the best multitree seen.

- SA: a worse neighbour is accepted with probability exp(−Δ/c_k), c_k = α·c_{k−1}; c_0 is
  the largest |Δ| over up to 10³ neighbours of the start (App. B: α = 0.99, I = 10³).
- Tabu: each step draws L neighbours and moves to the cheapest whose multitree is not on
  the tabu list (capacity C, oldest dropped first; App. B: L = 100, C = 10⁴).
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from cepplan.search.local import IndexTree
from cepplan.search.multitree import Multitree
from cepplan.search.neighbourhood import Neighbourhood

SA, TABU = "sa", "tabu"


@dataclass
class Progress:
    """The best multitree so far and how the search got there."""

    best_cost: float
    best_trees: list[IndexTree]
    steps: int = 0
    trace: list[tuple[float, float]] = field(default_factory=list)  # (seconds, best cost)
    clock: Callable[[], float] = time.perf_counter
    started: float = field(default_factory=time.perf_counter)

    def offer(self, state: Multitree) -> bool:
        """Record `state` if it is the best so far."""
        if state.cost < self.best_cost * (1 - 1e-12):
            self.best_cost = state.cost
            self.best_trees = list(state.trees)
            self.trace.append((round(self.clock() - self.started, 4), state.cost))
            return True
        return False


def anneal(state: Multitree, moves: Neighbourhood, rng: random.Random, deadline: float,
           progress: Progress, *, alpha: float = 0.99, samples: int = 1000,
           patience: int | None = None) -> None:
    """Simulated annealing from `state` until `deadline` (seed 004 App. B)."""
    c = _initial_threshold(state, moves, rng, deadline, samples)
    quiet = 0
    while time.perf_counter() < deadline and (patience is None or quiet < patience):
        before = state.cost
        undo = state.apply(moves.move(state, rng))
        delta = state.cost - before
        if delta > 0 and (c <= 0 or rng.random() >= math.exp(-delta / c)):
            state.apply(undo)
        progress.steps += 1
        quiet = 0 if progress.offer(state) else quiet + 1
        c *= alpha


def tabu(state: Multitree, moves: Neighbourhood, rng: random.Random, deadline: float,
         progress: Progress, *, neighbours: int = 100, capacity: int = 10_000,
         patience: int | None = None) -> None:
    """Tabu search from `state` until `deadline` (seed 004 App. B)."""
    visited: deque[int] = deque([state.signature], maxlen=capacity)
    forbidden = {state.signature}
    quiet = 0
    while time.perf_counter() < deadline and (patience is None or quiet < patience):
        best_move, best_cost, tried = None, math.inf, 0
        while tried < neighbours:
            tried += 1
            move = moves.move(state, rng)
            undo = state.apply(move)
            if state.signature not in forbidden and state.cost < best_cost:
                best_move, best_cost = move, state.cost
            state.apply(undo)
            if time.perf_counter() >= deadline:
                break
        progress.steps += 1
        if best_move is None:
            quiet += tried
            continue
        state.apply(best_move)
        if len(visited) == visited.maxlen:
            forbidden.discard(visited[0])
        visited.append(state.signature)
        forbidden.add(state.signature)
        quiet = 0 if progress.offer(state) else quiet + tried


def _initial_threshold(state: Multitree, moves: Neighbourhood, rng: random.Random,
                       deadline: float, samples: int) -> float:
    """c_0: the largest cost difference over up to `samples` neighbours of the start,
    spending at most a tenth of the remaining time."""
    stop = time.perf_counter() + 0.1 * max(0.0, deadline - time.perf_counter())
    largest = 0.0
    for _ in range(samples):
        before = state.cost
        undo = state.apply(moves.move(state, rng))
        largest = max(largest, abs(state.cost - before))
        state.apply(undo)
        if time.perf_counter() >= stop:
            break
    return largest
