"""Context-aware matches of the engine's context stage equal the brute-force reference (the
context-independent matches filtered to the windows), on random streams and on the traffic
example; grouped and per-window execution agree."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.contexts import run_with_contexts
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.workload import load_workload
from tests.contexts.context_workloads import CONTEXTS, PATTERNS, TYPES, context_workload, frame
from tests.contexts.reference_contexts import reference_context_matches
from tests.engine.reference_matcher import canonical

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traffic" / "workload.json"
EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 12), st.integers(0, 5),
                  st.sampled_from(["x", "y"]))
WORKLOAD = context_workload()
# a deriving pattern bound by a processing pattern: deriving patterns then run over every event
EAGER = context_workload(
    {**CONTEXTS, "types": {**CONTEXTS["types"], "busy": {
        "patterns": [*CONTEXTS["types"]["busy"]["patterns"], "after_rise"]}}},
    [dict(PATTERNS[0], emit={"k": "a.k", "v": "b.v"}), *PATTERNS[1:],
     {"name": "after_rise", "structure": ["SEQ", "r:rise", "b:B"], "where": ["b.v < r.v"],
      "partition_by": ["k"], "within": 3}])


def _same(found: dict, expected: dict) -> None:
    for name in expected:
        assert sorted(map(canonical, found[name])) == sorted(map(canonical, expected[name])), \
            name


@settings(max_examples=50)
@given(st.lists(EVENT, min_size=1, max_size=26), st.sampled_from([WORKLOAD, EAGER]))
def test_random_streams_match_filtered_reference(rows, workload):
    events = frame(rows)
    job = job_from_json(job_data(workload, trivial_plan(workload)))
    expected = reference_context_matches(workload, events)
    _same(run_local(events, job, chunk_events=5).matches, expected)
    _same(run_with_contexts(events, job, grouped=False).matches, expected)


def test_traffic_example_matches_filtered_reference():
    workload = load_workload(EXAMPLE)
    events = synthesize(workload, duration=120, seed=4, total_rate=1.0, n_keys=2,
                        truth_draws=1000).events
    result = run_local(events, job_from_json(job_data(workload, trivial_plan(workload))))
    expected = reference_context_matches(workload, events)
    _same(result.matches, expected)
    assert sum(map(len, expected.values())) > 0
