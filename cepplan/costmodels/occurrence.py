"""Occurrence models of one subevent (seed 002 §4, §4.2): how likely it occurs in a window,
how often it triggers the next plan state, and the distribution of the gap back to its last
occurrence (the X of the sequence operator, §4.1).

`rate` is the selected events per time unit: filters are pushed down (seed 002 §5.2), so a
filter of selectivity q keeps rate·q; a Bernoulli or Markov type keeps each event with
probability q (`q` below). A complex subevent is modelled as a Poisson process with its own
derived occurrence rate: the seed notes its occurrence probability does not depend on the plan
that detects it (§4.1, generalisation to complex subevents).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cepplan.costmodels import discrete_sums, markov

POISSON, BERNOULLI, MARKOV = "poisson", "bernoulli", "markov"


@dataclass(frozen=True)
class Occurrence:
    """One subevent's occurrence model.

    `step` is the model's time step in time units: the Bernoulli step (default 1 time unit,
    p per step), the Markov chain's step, or for Poisson the planning time step (None: the
    fine-grained limit the seed assumes in §4, "a sufficiently fine-grained time model").
    """

    kind: str
    rate: float
    step: float | None = None
    p: float | None = None
    transition: tuple[tuple[float, float], ...] | None = None
    q: float = 1.0


def poisson(rate: float, step: float | None = None) -> Occurrence:
    """A Poisson process of `rate` events per time unit."""
    return Occurrence(POISSON, rate, step)


def bernoulli(p: float, q: float = 1.0, step: float = 1.0) -> Occurrence:
    """Independent occurrence with probability p per step, thinned by q (seed 002 §4)."""
    return Occurrence(BERNOULLI, p * q / step, step, p=p, q=q)


def markov_chain(transition: tuple[tuple[float, float], ...], step: float,
                 q: float = 1.0) -> Occurrence:
    """An m-th order Markov chain per step (seed 002 §4.2); rate = stationary P(event)·q/step."""
    rate = markov.event_probability(transition, q) / step
    return Occurrence(MARKOV, rate, step, transition=transition, q=q)


def p_within(occ: Occurrence, window: float) -> float:
    """P(at least one selected event in a window of `window` time units): the factor
    (1 - e^{-λW}) or (1 - (1 - p)^W) of the reachability formulas (seed 002 §4.1)."""
    if occ.kind == POISSON:
        return -math.expm1(-occ.rate * window)
    if occ.kind == BERNOULLI:
        return 1.0 - (1.0 - occ.p * occ.q) ** (window / occ.step)
    steps = _steps(window, occ.step)
    return 1.0 - float(markov.no_event_probabilities(occ.transition, occ.q, steps)[-1])


def trigger_intensity(occ: Occurrence, period: float) -> float:
    """Triggers per time unit: P(the subevent occurs in the current step) / step — the
    (1 - e^{-λ}) factor of seed 002 §4 for a step of one time unit, λ in the fine limit, p for
    Bernoulli. For a Markov type it is the transition-based new-coverage intensity over the
    monitoring `period` that each trigger opens (seed 002 §4.2)."""
    if occ.kind == POISSON:
        return occ.rate if not occ.step else -math.expm1(-occ.rate * occ.step) / occ.step
    if occ.kind == BERNOULLI:
        return occ.p * occ.q / occ.step
    steps = _steps(period, occ.step)
    return markov.new_coverage_intensity(occ.transition, occ.q, steps) / occ.step


def gap_pmf(occ: Occurrence, step: float, steps: int) -> np.ndarray:
    """Mass of the gap back to the previous selected event on a grid of `steps` + 1 points of
    `step` time units (seed 002 §4.1: exponential for Poisson, geometric for Bernoulli; from
    the chain for Markov). A Poisson gap falling in ((g-1)·step, g·step] is put at g."""
    if occ.kind == POISSON:
        edges = np.arange(steps + 1) * step
        survival = np.exp(-occ.rate * edges)
        return discrete_sums.pmf_from_survival(survival)
    ratio = max(1, round(occ.step / step))
    if occ.kind == BERNOULLI:
        native = discrete_sums.geometric_pmf(occ.p * occ.q, steps // ratio)
    else:
        native = discrete_sums.pmf_from_survival(
            markov.no_event_probabilities(occ.transition, occ.q, steps // ratio))
    pmf = np.zeros(steps + 1)
    pmf[np.arange(len(native)) * ratio] = native
    return pmf


def _steps(window: float, step: float) -> int:
    return max(0, math.floor(window / step + 1e-9))
