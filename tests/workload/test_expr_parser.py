"""Parser properties (hypothesis): any text parses and round-trips, or raises ExprError."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.workload.expr.ast import Attr, Binary, Call, KleeneRef, Literal, Unary
from cepplan.workload.expr.errors import ExprError
from cepplan.workload.expr.parser import MAX_DEPTH, parse
from cepplan.workload.expr.printer import to_text

TOKENS = ["a.x", "b.y", "1", "2.5", "'s'", "true", "false", "(", ")", "+", "-", "*", "/", "%",
          "<", "<=", "==", "!=", ">", ">=", "and", "or", "not", "abs(", "min(", "max(",
          "distance(", "FIRST(", "NEXT(", ",", " ", ".", "=", "__x", "'", "1e3", "b", "x."]


def _parse_or_error(text: str):
    try:
        return parse(text)
    except ExprError as err:
        assert 0 <= err.pos <= len(text) + 1
        return None


@settings(max_examples=600)
@given(st.text(alphabet=string.printable, max_size=60))
def test_random_text_parses_or_raises_own_error(text):
    tree = _parse_or_error(text)
    if tree is not None:
        assert parse(to_text(tree)) == tree


@settings(max_examples=600)
@given(st.lists(st.sampled_from(TOKENS), max_size=25).map("".join))
def test_token_soup_parses_or_raises_own_error(text):
    tree = _parse_or_error(text)
    if tree is not None:
        assert parse(to_text(tree)) == tree


NAMES = st.sampled_from(["a", "b", "c", "leg_1", "ü", "σ1", "取引"])
ATTRS = st.sampled_from(["x", "y", "price", "sym", "Betrag", "été", "국가"])
LITERALS = st.one_of(
    st.integers(min_value=0, max_value=10**12).map(lambda v: Literal(v, "long")),
    st.floats(min_value=0, max_value=1e300, allow_nan=False).map(lambda v: Literal(v, "double")),
    st.text(alphabet=string.ascii_letters + "'\\ ", max_size=6).map(lambda v: Literal(v, "string")),
    st.booleans().map(lambda v: Literal(v, "bool")),
)
ATOMS = st.one_of(
    LITERALS,
    st.builds(Attr, NAMES, ATTRS),
    st.builds(KleeneRef, st.sampled_from(["FIRST", "LAST", "NEXT", "PREV"]),
              st.builds(Attr, NAMES, ATTRS)),
)
OPS = ["+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or"]


def _trees(children):
    return st.one_of(
        st.builds(Binary, st.sampled_from(OPS), children, children),
        st.builds(Unary, st.sampled_from(["-", "not"]), children),
        st.builds(Call, st.sampled_from(["abs", "min", "max", "distance"]),
                  st.lists(children, min_size=1, max_size=4).map(tuple)),
    )


TREES = st.recursive(ATOMS, _trees, max_leaves=20)


@settings(max_examples=800)
@given(TREES)
def test_random_trees_print_and_parse_back(tree):
    text = to_text(tree)
    try:
        parsed = parse(text)
    except ExprError as err:  # only the depth/length bounds may refuse a printed tree
        assert "nested" in err.message or "longer than" in err.message
        return
    assert parsed == tree


@pytest.mark.parametrize(
    ("text", "fragment", "column"),
    [
        ("a.x <", "expected a value, found end of text", 5),
        ("a.x < < 3", "expected a value, found '<'", 6),
        ("a.x < b.y < c.z", "comparisons cannot be chained", 10),
        ("a.x + ", "expected a value", 6),
        ("foo(a.x)", "unknown function 'foo'", 0),
        ("a.x == 'abc", "unterminated string", 7),
        ("a.x == \"abc\"", "strings use single quotes", 7),
        ("a.x ? 1", "unexpected character '?'", 4),
        ("a.x² > 1", "unexpected character '²'", 3),
        ("a. < 1", "expected an attribute name after 'a.'", 3),
        ("12abc > a.x", "malformed number", 2),
        ("(a.x > 1", "expected ')'", 8),
        ("a", "neither 'variable.attribute' nor a function call", 0),
        ("NEXT(1)", "NEXT() takes one 'variable.attribute'", 0),
        ("", "empty predicate", 0),
    ],
)
def test_syntax_errors_point_at_the_offending_character(text, fragment, column):
    with pytest.raises(ExprError) as info:
        parse(text)
    assert fragment in info.value.message
    assert info.value.pos == column


def test_precedence_and_associativity():
    tree = parse("a.x - b.y - 1 < 2 * a.x + 3 and not b.z or c.w")
    assert to_text(tree) == "a.x - b.y - 1 < 2 * a.x + 3 and not b.z or c.w"
    assert isinstance(tree, Binary) and tree.op == "or"
    left = tree.left.left.left  # a.x - b.y - 1: left-associative
    assert left == Binary("-", Binary("-", Attr("a", "x"), Attr("b", "y")), Literal(1, "long"))


def test_depth_bound():
    parse("(" * (MAX_DEPTH - 1) + "a.x" + ")" * (MAX_DEPTH - 1))
    with pytest.raises(ExprError, match="nested more than"):
        parse("(" * (MAX_DEPTH + 1) + "a.x" + ")" * (MAX_DEPTH + 1))
