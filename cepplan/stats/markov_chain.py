"""m-th order Markov chains of per-step occurrence (seed 002 §4.2): stationary distribution,
maximum-likelihood transitions from state counts, log-likelihoods and a burstiness figure.

A state is the last m steps, oldest first, read as a binary number (format doc, "statistics
(inline)"); `transition[s] = [P(no event next | s), P(event next | s)]`.
"""

from __future__ import annotations

import numpy as np


def stationary_distribution(transition: np.ndarray) -> np.ndarray:
    """The state distribution pi with pi P = pi (seed 002 §4.2), over the 2^m states.

    `transition` has one row per state and two columns (next step empty / occupied); the
    full state-to-state matrix follows from shifting the new bit in.
    """
    matrix = np.asarray(transition, dtype=float)
    states = len(matrix)
    full = np.zeros((states, states))
    for state in range(states):
        for bit in (0, 1):
            full[state, ((state << 1) | bit) % states] += matrix[state, bit]
    # Solve pi (P - I) = 0 with sum(pi) = 1, least squares for robustness.
    system = np.vstack([full.T - np.eye(states), np.ones(states)])
    rhs = np.zeros(states + 1)
    rhs[-1] = 1.0
    pi = np.linalg.lstsq(system, rhs, rcond=None)[0]
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def fit_transition(counts: np.ndarray) -> np.ndarray:
    """Maximum-likelihood transitions from `counts[state, next]`; an unseen state keeps the
    overall occupancy frequency (it has no evidence of its own)."""
    counts = np.asarray(counts, dtype=float)
    totals = counts.sum(axis=1, keepdims=True)
    overall = counts.sum(axis=0) / max(counts.sum(), 1.0)
    return np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), overall)


def log_likelihood(counts: np.ndarray, transition: np.ndarray) -> float:
    """Log-likelihood of transition counts under a chain (0 log 0 = 0)."""
    counts = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(transition), 0.0)
    return float(terms.sum())


def burstiness(p_event_after_event: float, p_event: float) -> float:
    """P(event | event in the previous step) / P(event): 1 for independent steps, above 1
    when events cluster (bursts), below 1 when they avoid each other."""
    return p_event_after_event / p_event if p_event > 0 else float("nan")
