"""The per-binding and the vectorised evaluators are independent implementations that agree."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.workload.expr.ast import Attr, Binary, Call, Literal, Unary
from cepplan.workload.expr.errors import ExprError
from cepplan.workload.expr.evaluate import holds
from cepplan.workload.expr.parser import parse
from cepplan.workload.expr.portable import from_portable, to_portable
from cepplan.workload.expr.typecheck import VarInfo, check_predicate
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

NUMERIC_ATTRS = [("a", "x"), ("a", "n"), ("b", "x"), ("b", "n")]
NUM_LEAVES = st.one_of(
    st.sampled_from(NUMERIC_ATTRS).map(lambda va: Attr(*va)),
    st.integers(min_value=0, max_value=50).map(lambda v: Literal(v, "long")),
    st.floats(min_value=0, max_value=50, allow_nan=False).map(lambda v: Literal(v, "double")),
)


def _numeric(children):
    return st.one_of(
        st.builds(Binary, st.sampled_from(["+", "-", "*", "/", "%"]), children, children),
        st.builds(Unary, st.just("-"), children),
        st.builds(Call, st.just("abs"), st.tuples(children)),
        st.builds(Call, st.sampled_from(["min", "max"]), st.tuples(children, children)),
        st.builds(Call, st.just("distance"), st.tuples(children, children, children, children)),
    )


NUMBERS = st.recursive(NUM_LEAVES, _numeric, max_leaves=8)
COMPARISONS = st.builds(Binary, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
                        NUMBERS, NUMBERS)


def _boolean(children):
    return st.one_of(
        st.builds(Binary, st.sampled_from(["and", "or"]), children, children),
        st.builds(Unary, st.just("not"), children),
    )


PREDICATES = st.recursive(COMPARISONS, _boolean, max_leaves=4)
ROWS = st.lists(
    st.tuples(st.integers(-5, 5), st.integers(-5, 5), st.integers(-5, 5), st.integers(-5, 5)),
    min_size=1, max_size=12,
)


@settings(max_examples=400)
@given(PREDICATES, ROWS)
def test_vectorised_matches_per_binding(tree, rows):
    variables = {v: VarInfo("T", {"x": "double", "n": "long"}) for v in ("a", "b")}
    check_predicate(tree, variables)  # the strategy only builds well-typed predicates
    columns = {
        ("a", "x"): np.array([float(r[0]) / 2 for r in rows]),
        ("a", "n"): np.array([r[1] for r in rows], dtype=np.int64),
        ("b", "x"): np.array([float(r[2]) / 2 for r in rows]),
        ("b", "n"): np.array([r[3] for r in rows], dtype=np.int64),
    }
    portable = to_portable(tree)
    assert from_portable(portable) == tree
    assert referenced_keys(portable) <= set(columns)
    vector = evaluate(portable, columns, len(rows))
    for i, r in enumerate(rows):
        binding = {"a": {"x": r[0] / 2, "n": r[1]}, "b": {"x": r[2] / 2, "n": r[3]}}
        assert bool(vector[i]) == holds(tree, binding), (i, r)


LIMIT = 2**63
NEAR_LIMITS = st.one_of(st.integers(-LIMIT, -LIMIT + 4), st.integers(LIMIT - 4, LIMIT - 1),
                        st.integers(-3, 3), st.integers(2**31 - 2, 2**32 + 2),
                        st.integers(-2**53 - 2, -2**53 + 2))
BIG_LEAVES = st.one_of(
    st.sampled_from(NUMERIC_ATTRS).map(lambda va: Attr(*va)),
    st.integers(-10**18 + 1, 10**18 - 1).map(lambda v: Literal(v, "long")),
    st.sampled_from([0.5, 4.0, 9.2e18, 9.223372036854775807e18, 2.0**63, -2.0**63]).map(
        lambda v: Literal(v, "double")))
BIG_PREDICATES = st.recursive(
    st.builds(Binary, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
              st.recursive(BIG_LEAVES, _numeric, max_leaves=5),
              st.recursive(BIG_LEAVES, _numeric, max_leaves=5)),
    _boolean, max_leaves=3)


@settings(max_examples=600)
@given(BIG_PREDICATES, st.lists(st.tuples(NEAR_LIMITS, NEAR_LIMITS, st.sampled_from(
    [0.0, -1.5, 9.2e18, 2.0**63, -2.0**63, 1e300])), min_size=1, max_size=8))
def test_whole_numbers_near_the_64_bit_limits_as_the_reference_says(tree, rows):
    """`a.n * 4 < 0` was true at 2^63 - 1 (int64 wrapped around); whole numbers are now
    exact, and meet doubles as doubles, in both evaluators."""
    variables = {v: VarInfo("T", {"x": "double", "n": "long"}) for v in ("a", "b")}
    check_predicate(tree, variables)
    columns = {("a", "x"): np.array([r[2] for r in rows]),
               ("a", "n"): np.array([r[0] for r in rows], dtype=np.int64),
               ("b", "x"): np.array([-r[2] for r in rows]),
               ("b", "n"): np.array([r[1] for r in rows], dtype=np.int64)}
    vector = evaluate(to_portable(tree), columns, len(rows))
    for i, r in enumerate(rows):
        binding = {"a": {"x": r[2], "n": r[0]}, "b": {"x": -r[2], "n": r[1]}}
        assert bool(vector[i]) == holds(tree, binding), (i, r)


@pytest.mark.parametrize("text", [
    "a.x < -(7991 * 1154220002109220)",          # a product just past 2^63, then negated
    "a.x < -abs(7991 * 1154220002109220)",
    "a.n > -(7991 * 1154220002109220)",           # beside an int64 column
    "a.n < 7991 * 1154220002109220 - 3",
    "-(a.n * 2) < 0",
])
def test_results_beyond_64_bits_stay_exact_when_negated_or_compared(text):
    """Found by the test above: a result beyond int64 came back as a bare Python integer,
    which NumPy read as a uint64 — negating it wrapped to a large positive number."""
    tree = parse(text)
    rows = [(0.0, 0), (-1.5, 2**62), (1e300, -2**63)]
    columns = {("a", "x"): np.array([r[0] for r in rows]),
               ("a", "n"): np.array([r[1] for r in rows], dtype=np.int64)}
    vector = evaluate(to_portable(tree), columns, len(rows))
    assert [bool(v) for v in vector] == [holds(tree, {"a": {"x": x, "n": n}}) for x, n in rows]


def test_division_and_modulo_by_zero_are_nan_in_both():
    tree = parse("a.x / a.n > 0 or a.x % a.n <= 0")
    binding = {"a": {"x": 3.0, "n": 0}}
    assert holds(tree, binding) is False
    columns = {("a", "x"): np.array([3.0]), ("a", "n"): np.array([0])}
    assert not evaluate(to_portable(tree), columns, 1)[0]


def test_strings_compare_in_both():
    tree = parse("a.s < b.s and a.s != 'zz'")
    columns = {("a", "s"): np.array(["apple", "zz", "m"], dtype=object),
               ("b", "s"): np.array(["banana", "zzz", "a"], dtype=object)}
    vector = evaluate(to_portable(tree), columns, 3)
    expected = [holds(tree, {"a": {"s": a}, "b": {"s": b}})
                for a, b in zip(columns[("a", "s")], columns[("b", "s")], strict=True)]
    assert list(vector) == expected == [True, False, False]


def _events(values):
    return [{"peak": v} for v in values]


def test_kleene_plain_reference_holds_for_every_event():
    tree = parse("a.peak < b.peak")
    kleene = frozenset({"b"})
    assert holds(tree, {"a": {"peak": 1}, "b": _events([2, 3, 4])}, kleene)
    assert not holds(tree, {"a": {"peak": 1}, "b": _events([2, 0, 4])}, kleene)


def test_kleene_next_checks_consecutive_pairs():
    tree = parse("b.peak < NEXT(b.peak)")
    kleene = frozenset({"b"})
    assert holds(tree, {"b": _events([1, 2, 5])}, kleene)
    assert not holds(tree, {"b": _events([1, 5, 2])}, kleene)
    assert holds(tree, {"b": _events([7])}, kleene)  # vacuous for one event


def test_kleene_prev_and_first_last():
    kleene = frozenset({"b"})
    binding = {"b": _events([3, 2, 1]), "c": {"peak": 0.5}}
    assert holds(parse("PREV(b.peak) > b.peak"), binding, kleene)
    assert holds(parse("c.peak < LAST(b.peak) and FIRST(b.peak) == 3"), binding, kleene)
    assert not holds(parse("c.peak > FIRST(b.peak)"), binding, kleene)


def test_vectorised_kleene_columns_are_caller_laid_out():
    tree = to_portable(parse("b.peak < NEXT(b.peak)"))
    assert referenced_keys(tree) == {("b", "peak"), ("NEXT", "b", "peak")}
    columns = {("b", "peak"): np.array([1.0, 5.0]), ("NEXT", "b", "peak"): np.array([5.0, 2.0])}
    assert list(evaluate(tree, columns, 2)) == [True, False]


def test_distance_function():
    tree = parse("distance(a.x, a.y, b.x, b.y) <= 5")
    assert holds(tree, {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}})
    assert not holds(tree, {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4.1}})
    assert math.isclose(5.0, math.hypot(3, 4))


def test_typed_kleene_reference_needs_kleene_variable():
    variables = {"a": VarInfo("T", {"x": "double"}), "b": VarInfo("T", {"x": "double"}, True)}
    check_predicate(parse("FIRST(b.x) < 1"), variables)
    with pytest.raises(ExprError, match="needs a KLEENE variable"):
        check_predicate(parse("FIRST(a.x) < 1"), variables)
