"""Covering-selection solvers on real CP-SAT against an exhaustive reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.planner.covering import (
    CPSAT,
    MNH,
    MQC,
    CoverInstance,
    instance,
    solve,
    solve_auto,
    solve_cpsat,
    solve_mnh,
    solve_mqc,
)


@st.composite
def instances(draw, max_size: int = 20, weighted: bool = False) -> CoverInstance:
    n = draw(st.integers(1, max_size))
    n_queries = draw(st.integers(1, n))
    owner = [draw(st.integers(0, n_queries - 1)) for _ in range(n)]
    serves = [draw(st.sets(st.integers(0, n - 1), max_size=min(n, 6))) for _ in range(n)]
    serves = [{i for i in s if owner[i] != owner[j]} for j, s in enumerate(serves)]
    weight = [draw(st.sampled_from([1.0, 2.0, 3.5])) for _ in range(n)] if weighted else None
    return instance(serves, owner, weight)


def brute_force_cost(inst: CoverInstance) -> float:
    """Cheapest cover by enumerating every subset of selections (bit masks, numpy)."""
    masks = [sum(1 << i for i in s) for s in inst.serves]
    union = np.zeros(1, dtype=np.int64)
    cost = np.zeros(1)
    for mask, weight in zip(masks, inst.weight, strict=True):
        union = np.concatenate([union, union | mask])
        cost = np.concatenate([cost, cost + weight])
    return float(cost[union == (1 << inst.size) - 1].min())


def assert_is_cover(inst: CoverInstance, chosen, assignment) -> None:
    assert len(assignment) == inst.size
    for i, server in enumerate(assignment):
        assert server in chosen and i in inst.serves[server]
    for j in chosen:
        assert assignment[j] == j


@given(instances(weighted=True))
@settings(max_examples=60)
def test_cpsat_is_optimal_like_brute_force(inst):
    result = solve_cpsat(inst, time_limit=5.0)
    assert result.status == "optimal" and result.gap == 0.0
    assert_is_cover(inst, result.chosen, result.assignment)
    assert abs(result.cost - brute_force_cost(inst)) < 1e-9


@given(instances(max_size=60))
@settings(max_examples=40)
def test_cpsat_never_takes_more_than_either_heuristic(inst):
    exact, greedy, neighbour = solve_cpsat(inst, 5.0), solve_mqc(inst), solve_mnh(inst)
    for result in (exact, greedy, neighbour):
        assert_is_cover(inst, result.chosen, result.assignment)
    assert len(exact.chosen) <= min(len(greedy.chosen), len(neighbour.chosen))


def test_mqc_follows_johnson_greedy_on_a_known_instance():
    # 0 serves {1, 2, 3}; 4 serves {3, 5}; 5 serves {4}: greedy takes 0, then 4 (covers 4, 5).
    inst = instance([{1, 2, 3}, set(), set(), set(), {3, 5}, {4}], owner=[0, 1, 2, 3, 4, 5])
    result = solve_mqc(inst)
    assert result.chosen == (0, 4) and result.assignment == (0, 0, 0, 0, 4, 4)


def test_mnh_serves_from_the_query_with_most_neighbours_first():
    # query 1 has the most neighbours; its selection 1 becomes the covering one for 0 and 2.
    inst = instance([{1}, {0, 2}, {1}], owner=[0, 1, 2], priority=[1, 2, 1])
    result = solve_mnh(inst)
    assert result.chosen == (1,) and result.assignment == (1, 1, 1)


def test_greedy_can_be_beaten_and_cpsat_finds_the_better_cover():
    # The classic set-cover trap: greedy takes the big middle set, then needs two more.
    inst = instance([{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12, 1, 2, 3}, set(), set(), set(),
                     set(), set(), {4, 5, 6, 10, 11, 12, 0}, set(), set(), set(), set(), set()])
    # selection 0 covers 0..6; 1 covers 1,2,3,7..12; 7 covers 0,4,5,6,7,10,11,12
    best = solve_cpsat(inst, 5.0)
    assert len(best.chosen) == brute_force_cost(inst)
    assert len(best.chosen) <= len(solve_mqc(inst).chosen)


def test_auto_says_which_solver_it_took():
    small = instance([{1}, {0}, set()])
    result = solve_auto(small, time_limit=2.0)
    assert result.solver == CPSAT and "fit" in result.reason
    big = instance([set(range(1, 400))] + [set(range(400))] * 399)
    result = solve_auto(big, time_limit=0.01)
    assert result.solver == MQC and "exceed" in result.reason


def test_solve_dispatches_by_name():
    inst = instance([{1}, {0}])
    assert solve(inst, MNH).solver == MNH and solve(inst, MQC).solver == MQC
