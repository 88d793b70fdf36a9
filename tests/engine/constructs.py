"""Templates and helpers of the pattern-construct tests (alternation, optional variables,
bounded repetition): the patterns, random streams full of equal timestamps, the workload as
the definition reads it (for the brute-force reference) and the engine's matches by the name
they are written under."""

from __future__ import annotations

import copy
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.workload.model import Workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_matcher_vs_reference import with_orders
from tests.engine.workloads import TYPES, workload

ALTERNATIONS = {
    "seq_middle": [{"name": "p", "structure": ["SEQ", "a:A", "x:B|C", "c:A"],
                    "where": ["x.v > a.v", "c.w >= x.w"], "within": 4}],
    "and_keyed": [{"name": "p", "structure": ["AND", "a:A", "x:C|B"],
                   "where": ["a.v + x.v > 3"], "partition_by": ["k"], "within": 3}],
    "two_overlapping": [{"name": "p", "structure": ["SEQ", "x:A|B", "y:B|C"],
                         "where": ["x.v <= y.v"], "within": 3}],
    "with_not": [{"name": "p", "structure": ["SEQ", "x:A|B", ["NOT", "n:C"], "c:A"],
                  "where": ["n.v > x.v"], "within": 4}],
    "with_kleene": [{"name": "p", "structure": ["SEQ", "x:A|C", ["KLEENE", "b:B"]],
                     "where": ["x.v <= b.v"], "within": 3}],
}

OPTIONALS = {
    "middle": [{"name": "p", "structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"], "c:C"],
                "where": ["b.v > a.v", "c.v >= b.v or c.w > 1.0", "c.v > a.v"],
                "within": 4}],
    "first": [{"name": "p", "structure": ["SEQ", ["OPTIONAL", "b:B"], "a:A", "c:A"],
               "where": ["a.v < c.v", "not (b.v > c.v)"], "within": 3}],
    "and_with_alternatives": [{"name": "p", "structure": ["AND", "a:A", ["OPTIONAL", "b:B"],
                                                          ["OPTIONAL", "x:C|B"]],
                               "where": ["b.v < x.v", "a.v >= 1"], "within": 3}],
    "before_not": [{"name": "p", "structure": ["SEQ", "a:A", ["OPTIONAL", "b:B"],
                                               ["NOT", "n:C"], "c:A"],
                    "where": ["n.v > b.v"], "within": 4}],
}


REPETITIONS = {
    "two_to_three": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B",
                                                                {"min": 2, "max": 3}]],
                      "where": ["a.v <= b.v"], "within": 4}],
    "at_least_two_filtered": [{"name": "p", "structure": ["SEQ", ["KLEENE", "b:B", {"min": 2}],
                                                          "c:C"],
                               "where": ["b.v < NEXT(b.v)", "c.v >= LAST(b.v)"],
                               "within": 3}],
    "at_most_two": [{"name": "p", "structure": ["AND", "a:A", ["KLEENE", "b:B", {"max": 2}]],
                     "where": ["FIRST(b.w) <= a.w"], "within": 3}],
    "zero_or_more": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B",
                                                                {"min": 0, "max": 2}], "c:C"],
                      "where": ["c.v > LAST(b.v) or c.v == 0"], "within": 4}],
    "two_bounded": [{"name": "p", "structure": ["SEQ", ["KLEENE", "a:A", {"max": 1}],
                                                ["KLEENE", "b:B", {"min": 2, "max": 2}]],
                     "where": ["a.v <= b.v"], "within": 3}],
}


ZERO_OR_MORE_FIRST = [{"name": "p", "structure": ["SEQ", ["KLEENE", "b:B", {"min": 0}], "c:C"],
                       "where": ["c.v >= FIRST(b.v) or c.w > 1.0"], "within": 3}]


STRATEGY = [{"name": "p", "structure": ["SEQ", "a:A", "x:B|C", "c:A"],
             "where": ["x.v > a.v", "c.v >= x.v"], "within": 4}]


EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 4), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


def on_streams(test):
    """`test(..., rows, chunk, data)` on hypothesis streams of up to 10 events (timestamps
    0 to 4: many ties), a chunk size and draws for evaluation orders."""
    drawn = given(rows=st.lists(EVENT, max_size=10), chunk=st.integers(1, 5), data=st.data())
    return settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])(drawn(test))


def user_workload(patterns: list[dict], ties: str) -> Workload:
    """The workload as the definition reads it, not expanded: each alternation variable
    loaded with its first type, then given all its types as its alternatives; each OPTIONAL
    operand loaded plain, then marked optional; each bounded KLEENE loaded as Kleene+, then
    given its bounds (min 0: optional)."""
    single = copy.deepcopy(patterns)
    marks: dict[tuple[str, str], dict] = {}
    for pattern in single:
        for i, leaf in enumerate(pattern["structure"]):
            optional = isinstance(leaf, list) and leaf[0] == "OPTIONAL"
            if isinstance(leaf, list) and leaf[0] == "KLEENE" and len(leaf) == 3:
                low, high = leaf[2].get("min", 1), leaf[2].get("max")
                marks[pattern["name"], leaf[1].split(":")[0]] = {
                    "min_count": max(1, low), "max_count": high, "optional": low == 0}
                pattern["structure"][i] = leaf[:2]
            leaf = leaf[1] if optional else leaf
            if isinstance(leaf, str) and i:
                var, types = leaf.split(":")
                alternatives = tuple(types.split("|")) if "|" in types else ()
                marks[pattern["name"], var] = {"alternatives": alternatives,
                                               "optional": optional}
                pattern["structure"][i] = f"{var}:{types.split('|')[0]}"
    wl = workload(single, seq_ties=ties)
    return replace(wl, patterns=tuple(
        replace(p, operands=tuple(replace(o, **marks.get((p.name, o.var), {}))
                                  for o in p.operands)) for p in wl.patterns))


def by_reported_name(matches: dict[str, list[dict]]) -> dict[str, list[tuple]]:
    """Every match, canonical, under the pattern name it was written with."""
    out: dict[str, list[tuple]] = {}
    for found in matches.values():
        for match in found:
            out.setdefault(match["pattern"], []).append(canonical(match))
    return {name: sorted(found) for name, found in out.items()}


def drawn_run(wl: Workload, events, chunk: int, data) -> dict[str, list[tuple]]:
    """The in-process engine's matches by reported name, under orders hypothesis draws."""
    plan = with_orders(trivial_plan(wl), wl, data)
    return by_reported_name(run_local(events, job_from_json(job_data(wl, plan)),
                                      chunk_events=chunk).matches)


def equals_reference(patterns: list[dict], ties: str, events, chunk: int, data) -> None:
    """Pattern p's matches on the in-process engine are the reference's, each once."""
    got = drawn_run(workload(patterns, seq_ties=ties), events, chunk, data).get("p", [])
    assert got == sorted(map(canonical, reference_matches(user_workload(patterns, ties),
                                                          events)["p"]))
    assert len(set(got)) == len(got), "a match was reported twice"
