"""Cost-model formulas against closed forms and Monte Carlo references (seed 002 §4, §4.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.costmodels import discrete_sums, hypoexponential, markov
from cepplan.costmodels.occurrence import (
    bernoulli,
    markov_chain,
    p_within,
    poisson,
    trigger_intensity,
)
from cepplan.costmodels.operators import (
    AND,
    SEQ,
    OperandModel,
    PatternModel,
    plan_cost,
    plan_latency,
)


def test_three_step_and_plan_is_the_seed_closed_form():
    """seed 002 §4 example: cost of e1 -> e2 -> e3 for and(e1, e2, e3, w), Poisson rates."""
    rates, w = (0.3, 0.7, 1.9), 2.5
    model = PatternModel(AND, w, tuple(OperandModel(f"e{i + 1}", poisson(r, 1.0), i)
                                       for i, r in enumerate(rates)))
    steps = (frozenset({"e1"}), frozenset({"e2"}), frozenset({"e3"}))
    got = plan_cost(model, steps, {f"e{i + 1}": r for i, r in enumerate(rates)})
    l1, l2, l3 = rates
    e = math.exp
    expected = (l1 + (1 - e(-l1)) * 2 * w * l2
                + ((1 - e(-l1)) * (1 - e(-w * l2)) + (1 - e(-l2)) * (1 - e(-w * l1))) * 2 * w * l3)
    assert got == pytest.approx(expected, rel=1e-12)
    assert plan_latency(model, steps, dict.fromkeys(("e1", "e2", "e3"), 1)) == 3


def test_naive_plan_costs_the_sum_of_rates():
    model = PatternModel(SEQ, 4.0, tuple(OperandModel(v, poisson(r), i)
                                         for i, (v, r) in enumerate([("a", 0.2), ("b", 3.0)])))
    assert plan_cost(model, (frozenset({"a", "b"}),), {"a": 0.2, "b": 3.0}) == pytest.approx(3.2)


def test_hypoexponential_matches_closed_forms():
    """Distinct rates: Σ_i Π_{j≠i} λ_j/(λ_j-λ_i) e^{-λ_i w}; equal rates: the Erlang CDF."""
    rates, w = (0.5, 1.3, 2.2), 1.7
    survival = sum(math.prod(rj / (rj - ri) for rj in rates if rj != ri) * math.exp(-ri * w)
                   for ri in rates)
    assert hypoexponential.hypoexponential_cdf(rates, w) == pytest.approx(1 - survival, abs=1e-12)
    lam, k = 0.8, 4
    erlang = 1 - sum(math.exp(-lam * w) * (lam * w) ** i / math.factorial(i) for i in range(k))
    assert hypoexponential.hypoexponential_cdf((lam,) * k, w) == pytest.approx(erlang, abs=1e-12)


def test_conditional_gap_means_match_monte_carlo():
    rng = np.random.default_rng(3)
    rates, w = (0.7, 0.7, 2.0), 2.0
    draws = np.column_stack([rng.exponential(1 / r, 2_000_000) for r in rates])
    inside = draws.sum(axis=1) <= w
    expected = draws[inside].mean(axis=0)
    got = hypoexponential.conditional_gap_means(rates, w)
    assert np.allclose(got, expected, rtol=0.01)
    assert hypoexponential.hypoexponential_cdf(rates, w) == pytest.approx(inside.mean(), abs=2e-3)


def test_geometric_sums_match_monte_carlo():
    rng = np.random.default_rng(4)
    ps, k = (0.1, 0.3, 0.3), 12
    draws = np.column_stack([rng.geometric(p, 2_000_000) for p in ps])
    inside = draws.sum(axis=1) <= k
    pmfs = [discrete_sums.geometric_pmf(p, k) for p in ps]
    assert discrete_sums.sum_cdf(pmfs, k) == pytest.approx(inside.mean(), abs=2e-3)
    assert np.allclose(discrete_sums.conditional_gap_means(pmfs, k),
                       draws[inside].mean(axis=0), rtol=0.01)


def test_markov_stationary_and_window_probabilities_match_a_simulated_chain():
    transition = ((0.95, 0.05), (0.3, 0.7))  # order 1: bursty
    pi = markov.stationary(transition)
    assert pi[1] == pytest.approx(0.05 / (0.05 + 0.3))
    rng = np.random.default_rng(5)
    steps = 1_000_000
    u = rng.random(steps)
    state = np.zeros(steps, dtype=np.int8)
    for t in range(1, steps):
        state[t] = u[t] < transition[state[t - 1]][1]
    window = 6
    sums = np.convolve(state, np.ones(window, dtype=int), mode="valid")
    no_event = markov.no_event_probabilities(transition, 1.0, window)[-1]
    assert no_event == pytest.approx((sums == 0).mean(), abs=3e-3)
    occ = markov_chain(transition, step=1.0)
    assert p_within(occ, window) == pytest.approx((sums > 0).mean(), abs=3e-3)


def test_second_order_chain_stationary_matches_simulation():
    transition = ((0.9, 0.1), (0.6, 0.4), (0.7, 0.3), (0.2, 0.8))  # states: last two steps
    rng = np.random.default_rng(6)
    history, events = 0, 0
    steps = 400_000
    for u in rng.random(steps):
        event = u < transition[history][1]
        events += event
        history = ((history << 1) | int(event)) & 3
    assert markov.event_probability(transition) == pytest.approx(events / steps, abs=4e-3)


def test_bernoulli_and_fine_poisson_limits():
    """Bernoulli: 1-(1-p)^W (seed 002 §4.1 (ii)); Poisson with a vanishing step -> λ."""
    assert p_within(bernoulli(0.2), 3.0) == pytest.approx(1 - 0.8**3)
    assert trigger_intensity(poisson(0.9, 1.0), 0.0) == pytest.approx(1 - math.exp(-0.9))
    assert trigger_intensity(poisson(0.9, 1e-6), 0.0) == pytest.approx(0.9, rel=1e-5)
    assert trigger_intensity(poisson(0.9), 0.0) == 0.9


@given(st.lists(st.floats(0.05, 50.0), min_size=1, max_size=5),
       st.floats(0.001, 5.0), st.integers(1, 300))
@settings(max_examples=40, deadline=None)
def test_grid_powers_are_the_step_matrix_powers(rates, t, points):
    """Occupancy rows e_0·P^g and survival columns P^g·1 of the blocked computation against
    NumPy's matrix powers, one grid point at a time."""
    step = hypoexponential.transient(tuple(rates), t)
    occupancy, survival = hypoexponential._grid_powers(step, points)
    for g in range(points):
        power = np.linalg.matrix_power(step, g)
        assert np.allclose(occupancy[g], power[0], rtol=1e-9, atol=1e-12)
        assert np.allclose(survival[g], power.sum(axis=1), rtol=1e-9, atol=1e-12)
