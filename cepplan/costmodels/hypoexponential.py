"""Sums of independent exponential gaps (seed 002 §4.1, sequence operator): the hypoexponential
CDF R(W) = P(X_1 + ... + X_m <= W) and the conditional gap means E[X_i | sum <= W].

The sum is a phase-type distribution with a bidiagonal generator T (phase i left at rate λ_i),
so R(W) = 1 - α·exp(T W)·1 holds for equal rates too (Erlang) where the textbook closed form
Σ_i Π_{j≠i} λ_j/(λ_j-λ_i) e^{-λ_i W} divides by zero.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


def _generator(rates: tuple[float, ...]) -> np.ndarray:
    m = len(rates)
    gen = np.zeros((m, m))
    for i, rate in enumerate(rates):
        gen[i, i] = -rate
        if i + 1 < m:
            gen[i, i + 1] = rate
    return gen


def transient(rates: tuple[float, ...], t: float) -> np.ndarray:
    """exp(T t) by uniformisation (P = I + T/Λ, Poisson-weighted powers: all terms are
    non-negative, so equal rates cost nothing) after scaling t by 2^-s, then squaring s
    times; plain NumPy products, much faster than a general expm for these small matrices."""
    gen = _generator(rates)
    lam = max(rates)
    squarings = max(0, math.ceil(math.log2(max(lam * t, 1e-300))))
    x = lam * t / 2**squarings
    jump = np.eye(len(rates)) + gen / lam
    term, power = math.exp(-x), np.eye(len(rates))
    out = term * power
    for k in range(1, 30):
        power = power @ jump
        term *= x / k
        out = out + term * power
    for _ in range(squarings):
        out = out @ out
    return out


@lru_cache(maxsize=65536)
def hypoexponential_cdf(rates: tuple[float, ...], w: float) -> float:
    """R(w) = P(Σ X_i <= w) for independent X_i ~ Exp(rates[i]) (seed 002 §4.1, [15])."""
    if not rates:
        return 1.0
    if min(rates) <= 0.0:
        return 0.0
    survival = transient(rates, w)[0].sum()
    return float(min(1.0, max(0.0, 1.0 - survival)))


@lru_cache(maxsize=65536)
def conditional_gap_means(rates: tuple[float, ...], w: float) -> tuple[float, ...]:
    """E[X_i | Σ X <= w] for each i: the expected monitoring interval between two consecutive
    detected subevents of a sequence (seed 002 §4.1, sequence operator, item 2).

    X_i is the time the chain spends in phase i, so E[X_i 1(S <= w)] = ∫_0^w P(in phase i at
    u) · P(absorbed by w | in phase i at u) du = ∫_0^w a_i(u) (1 - b_i(w - u)) du with
    a(u) = α exp(Tu), b(v) = exp(Tv) 1; Simpson's rule on a grid fine enough for the fastest
    phase (error far below the model's own approximations).
    """
    cdf = hypoexponential_cdf(rates, w)
    if not rates or cdf <= 0.0:
        return tuple(0.0 for _ in rates)
    cells = min(4096, max(64, 2 * math.ceil(4 * w * max(rates))))
    occupancy, survival = _grid_powers(transient(rates, w / cells), cells + 1)
    integrand = occupancy * (1.0 - survival[::-1])
    weights = np.ones(cells + 1)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    joint = (weights @ integrand) * (w / cells) / 3.0
    return tuple(float(max(0.0, j / cdf)) for j in joint)


_BLOCK = 64


def _powers(step: np.ndarray, count: int) -> np.ndarray:
    """step^0 .. step^(count-1), stacked: filled by doubling, log2(count) stacked products."""
    m = len(step)
    out = np.empty((count, m, m))
    out[0] = np.eye(m)
    filled, power = 1, step
    while filled < count:
        take = min(filled, count - filled)
        out[filled:filled + take] = out[:take] @ power
        filled += take
        power = power @ power
    return out


def _grid_powers(step: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows e_0 · step^g (occupancy) and step^g · 1 (survival) for g < `points`: g = 64j + k
    as step^(64j) · step^k, both stacks of powers by doubling and each side one tensor
    product (per grid point or per block of 64, the Python loop cost more than the sums)."""
    m = len(step)
    block = _powers(step, _BLOCK)
    leaps = _powers(block[-1] @ step, -(-points // _BLOCK))
    occupancy = np.tensordot(leaps[:, 0, :], block, axes=([1], [1])).reshape(-1, m)
    survival = np.tensordot(leaps.sum(axis=2), block, axes=([1], [2])).reshape(-1, m)
    return occupancy[:points], survival[:points]
