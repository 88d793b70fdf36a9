"""m-th order Markov chains of per-step occurrence (seed 002 §4.2): maximum-likelihood
transitions from state counts, log-likelihoods and a burstiness figure (the stationary
distribution is `cepplan.costmodels.markov.stationary`, shared with the cost model).

A state is the last m steps, oldest first, read as a binary number (format doc, "statistics
(inline)"); `transition[s] = [P(no event next | s), P(event next | s)]`.
"""

from __future__ import annotations

import numpy as np


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
