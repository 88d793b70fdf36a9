"""Sums of independent discrete gaps (geometric for Bernoulli events, chain-derived for Markov
events; seed 002 §4.1 and §4.2): P(Σ X <= K) and E[X_i | Σ X <= K] by exact convolution.

The seed notes that sums of non-identical geometric variables have no parametric distribution
and "have to be numerically calculated"; on a grid of K + 1 steps convolution is exact.
Each gap is given as its probability mass on 0..K steps (mass beyond K cannot fit the window).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def geometric_pmf(p: float, steps: int) -> np.ndarray:
    """P(X = g), g = 0..steps, for the gap back to the previous event of a Bernoulli(p) type
    (at least one step back: a strictly earlier event)."""
    g = np.arange(steps + 1)
    pmf = np.where(g >= 1, p * (1.0 - p) ** np.maximum(g - 1, 0), 0.0)
    return pmf


def pmf_from_survival(survival: np.ndarray) -> np.ndarray:
    """Gap pmf on 1..K from P(no event in the last g steps), g = 0..K (Markov gaps)."""
    pmf = np.zeros_like(survival)
    pmf[1:] = survival[:-1] - survival[1:]
    return np.clip(pmf, 0.0, None)


def _convolve_all(pmfs: Sequence[np.ndarray], size: int) -> np.ndarray:
    out = np.zeros(size)
    out[0] = 1.0
    for pmf in pmfs:
        out = np.convolve(out, pmf)[:size]
    return out


def sum_cdf(pmfs: Sequence[np.ndarray], steps: int) -> float:
    """P(Σ X_i <= steps) (the discrete R(W), seed 002 §4.1)."""
    return float(_convolve_all(pmfs, steps + 1).sum())


def conditional_gap_means(pmfs: Sequence[np.ndarray], steps: int) -> tuple[float, ...]:
    """E[X_i | Σ X <= steps] in steps, for each i (seed 002 §4.1, sequence item 2)."""
    total = sum_cdf(pmfs, steps)
    if total <= 0.0:
        return tuple(0.0 for _ in pmfs)
    means = []
    grid = np.arange(steps + 1)
    for i, pmf in enumerate(pmfs):
        rest = _convolve_all([p for j, p in enumerate(pmfs) if j != i], steps + 1)
        rest_cdf = np.cumsum(rest)
        joint = sum(grid[x] * pmf[x] * rest_cdf[steps - x] for x in range(steps + 1) if pmf[x])
        means.append(float(joint) / total)
    return tuple(means)
