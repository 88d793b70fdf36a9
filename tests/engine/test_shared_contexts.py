"""The shared plan together with contexts (local engine): patterns of different contexts fed
from one shared node (its partial matches computed once over the rows any of them receives
inside its windows) report the same matches and counts as each evaluated alone, and as the
brute-force context reference, on random streams."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.planner.plan import trivial_plan
from tests.contexts.context_workloads import CONTEXTS, PATTERNS, context_workload, frame, write_csv
from tests.contexts.reference_contexts import reference_context_matches
from tests.contexts.test_engine_vs_reference import EVENT
from tests.contexts.test_local_engine_contexts import _sorted, _written

EXTRA = [  # SEQ(A, C) with something on top, in the busy and the alarm context
    {"name": "acb", "structure": ["SEQ", "u:A", "w:C", "y:B"], "partition_by": ["k"],
     "within": 3},
    {"name": "aca", "structure": ["SEQ", "u:A", "w:C", "z:A"], "where": ["u.v < z.v"],
     "partition_by": ["k"], "within": 4},
]
TYPES = {**CONTEXTS["types"],
         "busy": {"patterns": [*CONTEXTS["types"]["busy"]["patterns"], "acb"]},
         "alarm": {"patterns": [*CONTEXTS["types"]["alarm"]["patterns"], "aca"]}}
WORKLOAD = context_workload({**CONTEXTS, "types": TYPES}, [*PATTERNS, *EXTRA])
# idle_only is SEQ(a:A, c:C) itself; pair is SEQ(a:A, NOT x:B, c:C), whose matches feed on_top
SHARING = {"shared": [{"size": 2, "window": 4.0, "users": {
    "idle_only": ["a", "c"], "acb": ["u", "w"], "aca": ["u", "w"], "pair": ["a", "c"]}}]}


def _data(share: bool) -> dict:
    data = job_data(WORKLOAD, trivial_plan(WORKLOAD))
    if share:
        data["sharing"] = SHARING
    return data


def test_the_plan_shares_across_contexts():
    plan = sharing_plan(job_from_json(_data(True)))
    assert plan.groups() == [["idle_only", "acb", "aca", "pair"]]


@settings(max_examples=25)
@given(st.lists(EVENT, min_size=1, max_size=30))
def test_shared_with_contexts_equals_alone_and_the_reference(rows):
    events = frame(rows)
    runs = {}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "events.csv"
        write_csv(events, path)
        for share in (True, False):
            out = Path(scratch) / f"out{share}"
            metrics = run_local_job(_data(share), [str(path)], out, say=lambda _: None)
            runs[share] = (_written(out), metrics)
    (shared, with_nodes), (alone, without) = runs[True], runs[False]
    assert shared == alone == _sorted(reference_context_matches(WORKLOAD, events))
    for key in ("matches", "rows_to_matchers_by_pattern", "kleene_cap_hits", "contexts"):
        assert with_nodes[key] == without[key], key
    assert [n["users"] for n in with_nodes["shared_nodes"]] == [["aca", "acb", "idle_only",
                                                                 "pair"]]
    assert "shared_nodes" not in without


def test_a_dense_stream_gives_shared_patterns_matches(tmp_path):
    rng = random.Random(4)
    rows = sorted(((rng.choice("ABC"), rng.uniform(0, 30), rng.randint(0, 5),
                    rng.choice("xy")) for _ in range(120)), key=lambda r: r[1])
    events = frame(rows)
    path = tmp_path / "events.csv"
    write_csv(events, path)
    metrics = run_local_job(_data(True), [str(path)], tmp_path / "out", say=lambda _: None)
    assert _written(tmp_path / "out") == _sorted(reference_context_matches(WORKLOAD, events))
    assert all(metrics["matches"][name] > 0 for name in ("idle_only", "acb", "aca", "pair"))
    assert metrics["shared_nodes"][0]["partial_matches"] > 0
