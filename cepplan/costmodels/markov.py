"""Markov occurrence models (seed 002 §4.2): stationary distribution and transition-based
window probabilities of an m-th order chain over "event / no event" per time step.

The chain's states are the last m steps, oldest first, read as a binary number (format doc,
"statistics"); `transition[s] = (P(no event next), P(event next))`. A selection probability `q`
thins the events (a filter that keeps each event independently with probability q, seed 002
§5.2); thinning keeps the computations exact: a step with an event that is not selected counts
as "no selected event".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def state_matrix(transition: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """(Q0, Q1): state-to-state matrices for a next step without / with an event."""
    size = len(transition)
    q0, q1 = np.zeros((size, size)), np.zeros((size, size))
    for state, (p_none, p_event) in enumerate(transition):
        q0[state, (state << 1) & (size - 1)] += p_none
        q1[state, ((state << 1) | 1) & (size - 1)] += p_event
    return q0, q1


def stationary(transition: Sequence[Sequence[float]]) -> np.ndarray:
    """The stationary distribution π of the chain, π P = π (seed 002 §4.2)."""
    q0, q1 = state_matrix(transition)
    full = q0 + q1
    size = full.shape[0]
    system = np.vstack([full.T - np.eye(size), np.ones(size)])
    rhs = np.zeros(size + 1)
    rhs[-1] = 1.0
    pi, *_ = np.linalg.lstsq(system, rhs, rcond=None)
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def event_probability(transition: Sequence[Sequence[float]], q: float = 1.0) -> float:
    """P(a selected event in a given step) under the stationary chain: the occurrence
    probability the seed uses in place of the Bernoulli p (§4.2)."""
    pi = stationary(transition)
    return float(q * sum(pi[s] * transition[s][1] for s in range(len(transition))))


def no_event_probabilities(transition: Sequence[Sequence[float]], q: float,
                           steps: int) -> np.ndarray:
    """P(no selected event in g consecutive steps) for g = 0..steps, stationary start."""
    q0, q1 = state_matrix(transition)
    quiet = q0 + (1.0 - q) * q1
    vector = stationary(transition)
    out = np.empty(steps + 1)
    for g in range(steps + 1):
        out[g] = vector.sum()
        vector = vector @ quiet
    return out


def new_coverage_intensity(transition: Sequence[Sequence[float]], q: float,
                           steps: int) -> float:
    """Per step: E[min(gap to the previous selected event, N) · 1(selected event now)] / N.

    With this as the trigger probability, a monitoring period of N steps opened at each event
    is charged only for the part not already opened by an earlier event of the burst: the
    transition-based reachability that makes the Markov model see overlapping monitoring
    intervals (seed 002 §4.2, the and(e1, e2, w) example with a bursty e1).
    """
    q0, q1 = state_matrix(transition)
    quiet = q0 + (1.0 - q) * q1
    fire = q * np.array([row[1] for row in transition])
    vector = stationary(transition)
    total = 0.0
    for _ in range(max(steps, 1)):
        total += float(vector @ fire)
        vector = vector @ quiet
    return total / max(steps, 1)
