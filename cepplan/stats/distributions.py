"""The two distribution figures the statistics report, in plain Python: the chi-square
survival function and the t quantile of the rate intervals. Importing scipy for them costs a
live stream's online statistics more CPU than they take (docs/engine.md, "Adaptive
re-planning")."""

from __future__ import annotations

import math

T_975_29 = 2.045229642132703  # the 0.975 quantile of Student's t with 29 degrees of freedom
EPSILON = 1e-16  # relative size of the last term kept
STIRLING_FROM = 100.0  # Stirling's series (3 terms) is exact to 1e-17 from here
TINY = 1e-300  # keeps the continued fraction's denominators off zero


def chi_square_survival(df: float, x: float) -> float:
    """P(X > x) for X chi-square with `df` degrees of freedom (scipy's `chdtrc`): the
    regularized upper incomplete gamma Q(df/2, x/2)."""
    if math.isnan(x) or math.isnan(df) or df <= 0:
        return math.nan
    if x <= 0:
        return 1.0
    if math.isinf(x):
        return 0.0
    a, half = df / 2, x / 2
    log_front = _log_front(a, half)
    if half < a + 1:
        return max(0.0, 1.0 - _lower_series(a, half, log_front))
    return _upper_fraction(a, half, log_front)


def _log_front(a: float, x: float) -> float:
    """log(x^a e^-x / Gamma(a)); for large `a` in a form without the cancellation of its
    terms (each near a log a), by Stirling's series for log Gamma."""
    if a < STIRLING_FROM:
        return a * math.log(x) - x - math.lgamma(a)
    ratio = (x - a) / a
    log_ratio = math.log1p(ratio) if abs(ratio) < 0.5 else math.log(x / a)
    correction = 1 / (12 * a) - 1 / (360 * a ** 3) + 1 / (1260 * a ** 5)
    return (a * (log_ratio - ratio) + 0.5 * math.log(a / (2 * math.pi))
            - correction)


def _lower_series(a: float, x: float, log_front: float) -> float:
    """P(a, x) by its series (converges fast for x < a + 1)."""
    term = total = 1.0 / a
    n = a
    while abs(term) > abs(total) * EPSILON:
        n += 1
        term *= x / n
        total += term
    return total * math.exp(log_front)


def _upper_fraction(a: float, x: float, log_front: float) -> float:
    """Q(a, x) by its continued fraction, evaluated by the modified Lentz method (converges
    fast for x >= a + 1)."""
    b = x + 1 - a
    c, d = 1 / TINY, 1 / b
    fraction = d
    step = 1
    while True:
        an = -step * (step - a)
        b += 2
        d = an * d + b
        d = TINY if abs(d) < TINY else d
        c = b + an / c
        c = TINY if abs(c) < TINY else c
        d = 1 / d
        change = d * c
        fraction *= change
        if abs(change - 1) < EPSILON:
            return math.exp(log_front) * fraction
        step += 1
