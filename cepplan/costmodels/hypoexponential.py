"""Sums of independent exponential gaps (seed 002 §4.1, sequence operator): the hypoexponential
CDF R(W) = P(X_1 + ... + X_m <= W) and the conditional gap means E[X_i | sum <= W].

The sum is a phase-type distribution with a bidiagonal generator T (phase i left at rate λ_i),
so R(W) = 1 - α·exp(T W)·1 holds for equal rates too (Erlang) where the textbook closed form
Σ_i Π_{j≠i} λ_j/(λ_j-λ_i) e^{-λ_i W} divides by zero. The gap means use
E[X_i 1(S<=W)] = R/λ_i - ∂R/∂λ_i (differentiate the exponential density in λ_i), with the
derivative of exp(TW) from scipy's exact Fréchet derivative.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.linalg import expm, expm_frechet


def _generator(rates: tuple[float, ...]) -> np.ndarray:
    m = len(rates)
    gen = np.zeros((m, m))
    for i, rate in enumerate(rates):
        gen[i, i] = -rate
        if i + 1 < m:
            gen[i, i + 1] = rate
    return gen


@lru_cache(maxsize=65536)
def hypoexponential_cdf(rates: tuple[float, ...], w: float) -> float:
    """R(w) = P(Σ X_i <= w) for independent X_i ~ Exp(rates[i]) (seed 002 §4.1, [15])."""
    if not rates:
        return 1.0
    if min(rates) <= 0.0:
        return 0.0
    survival = expm(_generator(rates) * w)[0].sum()
    return float(min(1.0, max(0.0, 1.0 - survival)))


@lru_cache(maxsize=65536)
def conditional_gap_means(rates: tuple[float, ...], w: float) -> tuple[float, ...]:
    """E[X_i | Σ X <= w] for each i: the expected monitoring interval between two consecutive
    detected subevents of a sequence (seed 002 §4.1, sequence operator, item 2)."""
    cdf = hypoexponential_cdf(rates, w)
    if not rates or cdf <= 0.0:
        return tuple(0.0 for _ in rates)
    gen = _generator(rates) * w
    means = []
    for i in range(len(rates)):
        direction = np.zeros_like(gen)
        direction[i, i] = -w
        if i + 1 < len(rates):
            direction[i, i + 1] = w
        _, derivative = expm_frechet(gen, direction)
        d_cdf = -derivative[0].sum()
        means.append(float(max(0.0, (cdf / rates[i] - d_cdf) / cdf)))
    return tuple(means)
