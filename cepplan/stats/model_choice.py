"""Fit and choose a type's occurrence model from per-step counts (seed 002 §4, §4.2).

Inputs are what the Spark job aggregates: the number of steps N in the observed range, how many
steps hold c events (c >= 1), and the counts of order-m occupancy transitions (state = last m
steps, oldest first as a binary number; next = whether the step is occupied). Pure NumPy/SciPy.

The choice, with its evidence reported:
1. Dependence: an m-th order Markov chain against independent steps, both fitted to the same
   occupancy transitions; the chain is chosen when its BIC is lower by more than
   `STRONG_EVIDENCE` (6, "strong" on the Kass & Raftery 1995 scale). A likelihood-ratio test
   (chi-square with 2^m - 1 degrees of freedom) is reported beside it.
2. Otherwise independent steps: Bernoulli (at most one event per step) against Poisson counts,
   both one parameter, on the counts; Bernoulli's likelihood is zero if any step holds two
   events, and it is chosen only when it beats Poisson by the same margin (no multi-event
   step where Poisson expects several), so sparse Poisson types stay Poisson.
The Poisson dispersion index (variance / mean of the counts per step; 1 for Poisson) and its
chi-square p-value for overdispersion are reported as evidence too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from cepplan.costmodels.markov import stationary
from cepplan.stats.distributions import chi_square_survival
from cepplan.stats.markov_chain import burstiness, fit_transition, log_likelihood

STRONG_EVIDENCE = 6.0


def choose_model(steps: int, histogram: Mapping[int, int], transitions: np.ndarray,
                 time_step: float) -> dict[str, Any]:
    """Every fitted model with its evidence, and the chosen one (`choice.model`) together with
    the `stats.json` `models` entry for it (`choice.entry`)."""
    events = sum(c * k for c, k in histogram.items())
    occupied = sum(k for c, k in histogram.items() if c >= 1)
    steps = max(steps, occupied, 1)
    counts = dict(histogram)
    counts[0] = steps - occupied
    poisson = _poisson(counts, steps, events)
    bernoulli = _bernoulli(counts, steps, occupied)
    markov = _markov(np.asarray(transitions, dtype=float))
    n_transitions = float(np.asarray(transitions).sum())
    bic = {"independent": -2 * markov["loglik_independent"] + math.log(max(n_transitions, 1)),
           "markov": -2 * markov["loglik"] + len(transitions) * math.log(max(n_transitions, 1)),
           "poisson": -2 * poisson["loglik"] + math.log(steps),
           "bernoulli": -2 * bernoulli["loglik"] + math.log(steps)}
    lrt = 2 * (markov["loglik"] - markov["loglik_independent"])
    df = len(transitions) - 1
    dependent = bic["markov"] < bic["independent"] - STRONG_EVIDENCE
    if dependent:
        model = "markov"
        reason = (f"occupancy depends on the last {markov['order']} step(s): BIC "
                  f"{bic['markov']:.1f} vs {bic['independent']:.1f} for independent steps")
    elif bic["bernoulli"] < bic["poisson"] - STRONG_EVIDENCE:
        model = "bernoulli"
        reason = "independent steps, never more than one event per step"
    else:
        model = "poisson"
        reason = "independent steps" + ("" if bernoulli["max_count"] <= 1 else
                                         ", several events per step")
    return {
        "time_step": time_step, "steps": steps, "events": events,
        "poisson": poisson, "bernoulli": bernoulli, "markov": markov,
        "choice": {"model": model, "reason": reason, "bic": bic,
                   "lrt": {"statistic": lrt, "df": df,
                           "p_value": chi_square_survival(df, max(lrt, 0.0)) if df else 1.0},
                   "entry": _entry(model, bernoulli["p"], markov, time_step)},
    }


def _poisson(counts: Mapping[int, int], steps: int, events: int) -> dict[str, Any]:
    mean = events / steps
    square = sum(c * c * k for c, k in counts.items())
    variance = (square - steps * mean * mean) / (steps - 1) if steps > 1 else 0.0
    dispersion = variance / mean if mean > 0 else float("nan")
    p_over = (chi_square_survival(steps - 1, (steps - 1) * dispersion)
              if mean > 0 and steps > 1 else float("nan"))
    loglik = 0.0
    if mean > 0:
        loglik = sum(k * (c * math.log(mean) - mean - math.lgamma(c + 1))
                     for c, k in counts.items())
    return {"mean_per_step": mean, "variance_per_step": variance,
            "dispersion_index": dispersion, "p_overdispersed": p_over, "loglik": float(loglik)}


def _bernoulli(counts: Mapping[int, int], steps: int, occupied: int) -> dict[str, Any]:
    p = occupied / steps
    max_count = max((c for c, k in counts.items() if k > 0), default=0)
    loglik = (-math.inf if max_count > 1
              else _xlogy(occupied, p) + _xlogy(steps - occupied, 1 - p))
    return {"p": p, "max_count": max_count, "loglik": loglik}


def _markov(transitions: np.ndarray) -> dict[str, Any]:
    order = len(transitions).bit_length() - 1
    matrix = fit_transition(transitions)
    pi = stationary(matrix)
    p_event = float(pi @ matrix[:, 1])
    after_event = transitions[1::2].sum(axis=0)  # states whose newest step is occupied
    p_after = after_event[1] / after_event.sum() if after_event.sum() else float("nan")
    column = transitions.sum(axis=0)
    p_step = column[1] / column.sum() if column.sum() else 0.0
    independent = _xlogy(column[1], p_step) + _xlogy(column[0], 1 - p_step)
    return {"order": order, "transition": matrix.tolist(), "stationary": pi.tolist(),
            "transition_counts": transitions.astype(int).tolist(), "p_event": p_event,
            "p_event_after_event": float(p_after),
            "burstiness": burstiness(float(p_after), p_event),
            "mean_burst_steps": 1 / (1 - p_after) if p_after < 1 else None,
            "loglik": log_likelihood(transitions, matrix),
            "loglik_independent": independent}


def _entry(model: str, p: float, markov: Mapping[str, Any], time_step: float) -> dict:
    """The `models` entry the planner reads (format doc, "statistics (inline)"). A Bernoulli
    `p` is per time unit there, so for another step it is written as the equivalent order-1
    chain with identical rows."""
    if model == "poisson":
        return {"kind": "poisson"}
    if model == "bernoulli":
        if time_step == 1:
            return {"kind": "bernoulli", "p": p}
        row = [1 - p, p]
        return {"kind": "markov", "order": 1, "time_step": time_step, "transition": [row, row]}
    return {"kind": "markov", "order": markov["order"], "time_step": time_step,
            "transition": markov["transition"]}


def _xlogy(count: float, p: float) -> float:
    return float(count * math.log(p)) if count > 0 else 0.0
