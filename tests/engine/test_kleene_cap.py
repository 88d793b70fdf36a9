"""The Kleene cap's cuts (`kleene_cap_hits`) against independent counts: the brute-force
reference matcher (which has no cap) gives each binding of the other variables and of the
Kleene variable's last event its events; a binding with more than the cap's is one cut, and
the capped run finds exactly the reference's matches drawn from the binding's latest cap - 1
events besides its last. A window of thousands of events of the Kleene type, where the counts
are known in closed form, costs O(cap) per binding and gives the same figures."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import workload

BURSTS = [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
           "where": ["a.v <= b.v", "c.v > 0"], "within": 6}]
EVENT = st.tuples(st.sampled_from("ABC"), st.integers(0, 12), st.integers(0, 4),
                  st.just(0.5), st.just("x"))


def reference_cuts(reference: list[dict], cap: int) -> tuple[int, set]:
    """From the uncapped matches: the bindings (a, c, b's last event) with more than `cap`
    events of b, and the matches a capped run keeps (b's events among the latest cap - 1
    before its last, plus the last)."""
    events = defaultdict(set)
    for match in reference:
        ids = [e["id"] for e in match["events"]["b"]]
        key = (match["events"]["a"]["id"], match["events"]["c"]["id"], ids[-1])
        events[key].update(ids)
    kept = set()
    for match in reference:
        ids = [e["id"] for e in match["events"]["b"]]
        key = (match["events"]["a"]["id"], match["events"]["c"]["id"], ids[-1])
        latest = sorted(events[key] - {ids[-1]})[-(cap - 1):] if cap > 1 else []
        if set(ids[:-1]) <= set(latest):
            kept.add(canonical(match))
    return sum(len(found) > cap for found in events.values()), kept


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(EVENT, min_size=4, max_size=26), cap=st.integers(1, 5),
       chunk=st.sampled_from([3, 16, 4096]))
def test_cap_hits_count_the_bindings_with_more_events_than_the_cap(rows, cap, chunk):
    """Timestamps in arrival order (ids ascend with time); each cut counted once, whatever
    the chunks the table is walked in."""
    rows = sorted(rows, key=lambda r: r[1])
    wl = workload(BURSTS, kleene_cap=cap)
    events = frame(rows)
    result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))),
                       chunk_events=chunk)
    hits, kept = reference_cuts(reference_matches(wl, events)["p"], cap)
    assert result.cap_hits["p"] == hits
    assert set(map(canonical, result.matches["p"])) == kept


def test_a_window_of_thousands_of_kleene_events():
    """A, then 3,000 B (every third passing `a.v <= b.v`), then C, in one window: the k-th
    passing B as last event has k - 1 before it, so with cap 4 the bindings number 1,000,
    the cuts 1,000 - 4, and the matches sum 2^min(k - 1, 3)."""
    count, cap = 3000, 4
    rows = [("A", 0, 2, 0.5, "x")]
    rows += [("B", 1 + i / 1000, 2 if i % 3 == 2 else 1, 0.5, "x") for i in range(count)]
    rows.append(("C", 5, 1, 0.5, "x"))
    wl = workload(BURSTS, kleene_cap=cap)
    result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
    passing = count // 3
    assert result.cap_hits["p"] == passing - cap
    assert len(result.matches["p"]) == sum(2 ** min(k - 1, cap - 1)
                                           for k in range(1, passing + 1))
    assert all(len(m["events"]["b"]) <= cap for m in result.matches["p"])
