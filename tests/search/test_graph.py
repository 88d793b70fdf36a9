"""The multi-pattern graph: maximal common subpatterns (seed 004 §4.1, App. A)."""

from __future__ import annotations

import random
from itertools import combinations

from cepplan.search.graph import build_graph, maximal_common, subpattern_key
from cepplan.search.local import Compiled, Interner
from cepplan.search.problem import problem_from_workload
from cepplan.workload.loader import build_workload
from tests.search.helpers import random_pattern


def compiled(*patterns: dict) -> list[Compiled]:
    raw = {"format": "cepplan.workload/1", "name": "g", "time_unit": "s",
           "schemas": {"E": {"x": "double"}},
           "event_types": {t: {"schema": "E"} for t in "ABCDEFG"},
           "patterns": [{"name": f"p{i}", **p} for i, p in enumerate(patterns)],
           "statistics": {"rates": {t: 1.0 for t in "ABCDEFG"}}}
    wl = build_workload(raw)
    interner = Interner()
    return [Compiled(p, interner) for p in problem_from_workload(wl, wl.statistics).patterns]


def types_of(keys) -> list[list[str]]:
    return sorted(sorted(label.split('"')[1] for label in key[1]) for key in keys)


def test_conflicting_filters_drop_the_event():
    a, b = compiled({"structure": ["AND", "a:A", "b:B", "c:C"], "where": ["a.x < 10"],
                     "within": "5s"},
                    {"structure": ["AND", "a:A", "b:B", "c:C"], "where": ["a.x >= 10"],
                     "within": "5s"})
    assert types_of(maximal_common(a, b)) == [["B", "C"]]


def test_opposite_sequence_orders_give_two_maximal_subpatterns():
    a, b = compiled({"structure": ["SEQ", "a:A", "b:B", "c:C"], "within": "5s"},
                    {"structure": ["SEQ", "a:A", "c:C", "b:B"], "within": "5s"})
    assert types_of(maximal_common(a, b)) == [["A", "B"], ["A", "C"]]


def test_equal_conditions_on_different_names_match_and_conflicting_ones_shrink():
    a, b, c = compiled(
        {"structure": ["SEQ", "a:A", "b:B", "c:C"], "where": ["a.x < b.x"], "within": "5s"},
        {"structure": ["SEQ", "u:A", "v:B", "w:C"], "where": ["u.x < v.x"], "within": "9s"},
        {"structure": ["SEQ", "u:A", "v:B", "w:C"], "where": ["v.x < u.x"], "within": "9s"})
    assert types_of(maximal_common(a, b)) == [["A", "B", "C"]]
    assert types_of(maximal_common(a, c)) == [["A", "C"], ["B", "C"]]


def test_hash_tables_and_components():
    patterns = compiled(
        {"structure": ["SEQ", "a:A", "b:B", "c:C"], "within": "5s"},
        {"structure": ["SEQ", "a:A", "b:B", "d:D"], "within": "5s"},
        {"structure": ["SEQ", "a:A", "b:B"], "within": "5s"},
        {"structure": ["AND", "e:E", "f:F"], "within": "5s"},
        {"structure": ["AND", "f:F", "e:E", "g:G"], "within": "5s"},
        {"structure": ["SEQ", "g:G", "c:C"], "within": "5s"})
    graph = build_graph(patterns)
    assert graph.components(len(patterns)) == [[0, 1, 2], [3, 4], [5]]
    (key,) = [k for k in graph.owners if len(k[1]) == 2 and k[0] == "SEQ"]
    assert graph.owners[key] == {0, 1, 2}
    assert all(key in graph.peers[i] for i in (0, 1, 2))


def test_graph_equals_brute_force_over_every_subset_of_common_events():
    """Every edge's maximal common subpatterns equal the maximal subsets of the common events
    on which both patterns project to the same subpattern (enumerated), on random workloads."""
    rng = random.Random(11)
    for _ in range(30):
        interner = Interner()
        patterns = [Compiled(random_pattern(rng, rng.randint(2, 5), f"p{i}", "ABCDEF"), interner)
                    for i in range(12)]
        graph = build_graph(patterns)
        owners: dict = {}
        for (i, a), (j, b) in combinations(enumerate(patterns), 2):
            common = sorted(set(a.labels) & set(b.labels))
            equal = [frozenset(s) for r in range(2, len(common) + 1)
                     for s in combinations(common, r)
                     if a.pattern.operator == b.pattern.operator
                     and subpattern_key(a, frozenset(s)) == subpattern_key(b, frozenset(s))]
            expected = {subpattern_key(a, s) for s in equal if not any(s < t for t in equal)}
            assert set(graph.edges.get((i, j), ())) == expected
            for key in expected:
                owners.setdefault(key, set()).update((i, j))
        assert graph.owners == owners
        assert {k: set(v) for k, v in graph.peers.items() if v} == \
            {k: {key for key, users in owners.items() if k in users}
             for k in range(len(patterns)) if any(k in u for u in owners.values())}
