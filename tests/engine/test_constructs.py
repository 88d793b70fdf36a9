"""Every pattern construct template (alternation, optional variables, bounded repetition) on
the in-process engine equals the brute-force reference written from the definitions, alone
and under selection strategies, on random streams full of equal timestamps, under every
evaluation order, each match once under the user's pattern name."""

from __future__ import annotations

import pytest

from tests.engine.constructs import (
    ALTERNATIONS,
    OPTIONALS,
    REPETITIONS,
    STRATEGY,
    ZERO_OR_MORE_FIRST,
    drawn_run,
    equals_reference,
    on_streams,
    user_workload,
)
from tests.engine.reference_matcher import canonical
from tests.engine.reference_strategies import strategy_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import workload

TEMPLATES = ALTERNATIONS | OPTIONALS | REPETITIONS
UNDER_STRATEGY = [(STRATEGY, s) for s in ("next", "strict", {"x": "next"}, {"c": "next"})] + \
    [(OPTIONALS["middle"], s) for s in ("next", "strict")] + \
    [(REPETITIONS["zero_or_more"], s) for s in ("strict", {"b": "strict"}, {"c": "strict"})] + \
    [(ZERO_OR_MORE_FIRST, "strict")]


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize("name", sorted(TEMPLATES))
@on_streams
def test_construct_equals_reference(name, ties, rows, chunk, data):
    equals_reference(TEMPLATES[name], ties, frame(rows), chunk, data)


@pytest.mark.parametrize("ties", ["strict", "allow"])
@pytest.mark.parametrize(("patterns", "strategy"), UNDER_STRATEGY)
@on_streams
def test_construct_under_strategy_equals_reference(patterns, strategy, ties, rows, chunk, data):
    """Under `next`, an event of any of x's types satisfying x's conditions comes first; a
    strategy holds between the variables a match binds (an unbound optional one is none, a
    KLEENE with min 0 included: MATCH_RECOGNIZE's `A B* C`)."""
    events = frame(rows)
    got = drawn_run(workload([{**patterns[0], "strategy": strategy}], seq_ties=ties), events,
                    chunk, data)
    expected = strategy_matches(user_workload(patterns, ties), {"p": strategy}, events)
    assert got.get("p", []) == sorted(map(canonical, expected["p"]))
