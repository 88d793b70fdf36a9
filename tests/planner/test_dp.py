"""The DP planner against brute-force enumeration of every plan (seed 002 §3.2.1)."""

from __future__ import annotations

import random

import pytest

from cepplan.costmodels.occurrence import bernoulli, poisson
from cepplan.costmodels.operators import AND, SEQ, OperandModel, PatternModel
from cepplan.planner import dp, heuristics
from cepplan.planner.candidates import Option, evaluate, pareto_front
from cepplan.planner.front import pattern_front
from cepplan.planner.strategies import STRATEGIES, limit
from tests.planner.brute import ordered_partitions

PLAN_COUNTS = {3: 13, 4: 75, 5: 541}


def _front_points(front):
    return [(round(c.latency), round(c.cost, 9)) for c in front]


def _random_model(rng: random.Random, operator: str, n: int, kind: str = "poisson"):
    names = tuple(f"e{i}" for i in range(n))
    if kind == "poisson":
        occs = [poisson(rng.uniform(0.05, 2.0)) for _ in names]
    else:
        occs = [bernoulli(rng.uniform(0.02, 0.6)) for _ in names]
    operands = tuple(OperandModel(v, o, i)
                     for i, (v, o) in enumerate(zip(names, occs, strict=True)))
    model = PatternModel(operator, rng.uniform(0.5, 4.0), operands)
    return model, names, {v: [Option(o.rate, 1)] for v, o in zip(names, occs, strict=True)}


@pytest.mark.parametrize("operator", [AND, SEQ])
@pytest.mark.parametrize("n", [3, 4, 5])
@pytest.mark.parametrize("kind", ["poisson", "bernoulli"])
def test_dp_front_equals_brute_force(operator, n, kind):
    rng = random.Random(n * 31 + len(operator) + len(kind))
    for _ in range(4):
        model, names, options = _random_model(rng, operator, n, kind)
        plans = list(ordered_partitions(names))
        assert len(plans) == PLAN_COUNTS[n]
        brute = pareto_front(evaluate(model, p, options, dict.fromkeys(names, 0)) for p in plans)
        assert _front_points(dp.solve(model, options)) == _front_points(brute)


@pytest.mark.parametrize("operator", [AND, SEQ])
def test_dp_with_complex_options_equals_brute_force(operator):
    """Complex subevents offer several (cost, latency) plans: enumerate steps × options."""
    rng = random.Random(7)
    for _ in range(3):
        model, names, _ = _random_model(rng, operator, 4)
        options = {v: [Option(rng.uniform(0.1, 3), rng.randint(1, 3)) for _ in range(3)]
                   for v in names}
        every = []
        for steps in ordered_partitions(names):
            for combo in range(3 ** len(names)):
                choices = {v: combo // 3**i % 3 for i, v in enumerate(names)}
                every.append(evaluate(model, steps, options, choices))
        assert _front_points(dp.solve(model, options)) == _front_points(pareto_front(every))


def test_heuristic_plans_are_never_better_than_the_dp_front():
    rng = random.Random(11)
    for _ in range(10):
        model, _, options = _random_model(rng, AND, 6)
        exact = dp.solve(model, options)
        for plan in heuristics.solve(model, options):
            best = min(c.cost for c in exact if c.latency <= plan.latency)
            assert plan.cost >= best - 1e-9


def test_negation_is_monitored_after_the_positive_subevents():
    model = PatternModel(SEQ, 2.0, (OperandModel("x", poisson(0.1), 0),
                                    OperandModel("g", poisson(2.0), 1, negated=True),
                                    OperandModel("y", poisson(0.3), 2)))
    options = {o.var: [Option(o.occurrence.rate, 1)] for o in model.operands}
    front, _ = pattern_front(model, options, "dp")
    assert {c.steps[-1] for c in front if len(c.steps) > 1} == {frozenset({"g"})}
    assert front[-1].cost < 0.1 + 2.0 + 0.3  # filtering beats pushing the frequent g


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_k_strategies_keep_k_plans_and_mixture_keeps_the_extremes(strategy):
    rng = random.Random(2)
    model, _, options = _random_model(rng, AND, 8)
    front = dp.solve(model, options)
    kept = limit(front, 3, strategy, seed=1)
    assert len(kept) == 3 and all(c in front for c in kept)
    if strategy == "mixture":
        assert front[0] in kept and min(front, key=lambda c: c.cost) in kept


@pytest.mark.parametrize("operator", [AND, SEQ])
def test_heuristic_front_with_negation_is_valid_and_never_beats_brute_force(operator):
    """Forced heuristics on a pattern with a negated operand: every plan on the front covers
    each variable once and none is cheaper than the brute-force optimum."""
    rng = random.Random(7 + len(operator))
    for _ in range(4):
        model, names, options = _random_model(rng, operator, 4)
        negated = model.operands[1]
        model = PatternModel(model.operator, model.window,
                             tuple(OperandModel(o.var, o.occurrence, o.position,
                                                negated=o.var == negated.var)
                                   for o in model.operands))
        positives = tuple(v for v in names if v != negated.var)
        brute = [evaluate(model, (*p, frozenset({negated.var})), options,
                          dict.fromkeys(names, 0)) for p in ordered_partitions(positives)]
        brute.append(evaluate(model, (frozenset(names),), options, dict.fromkeys(names, 0)))
        front, used = pattern_front(model, options, "heuristic")
        assert used == "heuristic"
        for plan in front:
            assert sorted(v for s in plan.steps for v in s) == sorted(names)
        assert min(c.cost for c in front) >= min(c.cost for c in brute) - 1e-12
