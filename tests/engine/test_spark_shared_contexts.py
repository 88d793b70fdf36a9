"""The Spark job running a shared plan together with contexts (the session's local Spark):
patterns of several contexts fed from one shared node write the local engine's matches and
the brute-force context reference's, with the local engine's counts, `contexts` and
`shared_nodes` (the local engine's equal its own unshared run's: test_shared_contexts); a
deriving pattern named as a user runs alone, first, and metrics.json says why."""

from __future__ import annotations

import random

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.plan import trivial_plan
from tests.contexts.context_workloads import CONTEXTS, PATTERNS, context_workload, frame, write_csv
from tests.contexts.reference_contexts import reference_context_matches
from tests.contexts.test_local_engine_contexts import _sorted
from tests.contexts.test_spark_contexts import written_matches
from tests.engine.test_shared_contexts import EXTRA, SHARING, TYPES

# SEQ(A, A) rising, inside the busy context: it could share `rise`'s subtree, but `rise`
# opens the busy context, so both run alone
RISING = {"name": "aab", "structure": ["SEQ", "u:A", "w:A", "y:B"], "where": ["u.v < w.v"],
          "partition_by": ["k"], "within": 3}
WORKLOAD = context_workload(
    {**CONTEXTS, "types": {**TYPES, "busy": {"patterns": [*TYPES["busy"]["patterns"], "aab"]}}},
    [*PATTERNS, *EXTRA, RISING])
PLAN = {"shared": [*SHARING["shared"], {"size": 2, "window": 3.0, "users": {
    "rise": ["a", "b"], "aab": ["u", "w"]}}]}
SAME = ("rows_read", "rows_rejected", "rows_to_matchers", "rows_to_matchers_by_pattern",
        "matches", "kleene_cap_hits", "contexts", "shared_nodes")


def _data() -> dict:
    return {**job_data(WORKLOAD, trivial_plan(WORKLOAD)), "sharing": PLAN}


def _stream(seed: int, rows: int, span: int) -> list[tuple]:
    """Random (type, ts, v, k) rows in time order; whole-second times, so many ties."""
    draw = random.Random(seed)
    return sorted(((draw.choice("ABC"), draw.randint(0, span), draw.randint(0, 5),
                    draw.choice("xy")) for _ in range(rows)), key=lambda r: r[1])


def test_shared_with_contexts_on_spark_equals_local_and_reference(spark, tmp_path):
    events = frame(_stream(3, 150, 40))
    path = tmp_path / "events.csv"
    write_csv(events, path)
    files = [str(path)]
    local = run_local_job(_data(), files, tmp_path / "local", say=lambda _: None)
    shared = run_job(spark, _data(), files, str(tmp_path / "shared"), say=lambda _: None)
    expected = _sorted(reference_context_matches(WORKLOAD, events))
    assert written_matches(tmp_path / "shared") == expected
    assert written_matches(tmp_path / "local") == expected
    # range-local tasks cannot see the context state their range starts in (docs/engine.md)
    assert shared["spark_plan"] == "shuffle"
    for key in SAME:
        assert shared[key] == local[key], key
    nodes = shared["shared_nodes"]
    assert [n["users"] for n in nodes] == [["aca", "acb", "idle_only", "pair"]]
    assert nodes[0]["partial_matches"] > 0
    assert all(shared["matches"][n] > 0 for n in ("idle_only", "acb", "aca", "pair"))
    reasons = {u["pattern"]: u["reason"] for u in shared["sharing_unused"]}
    assert reasons["rise"].startswith("it opens or closes contexts")
    assert set(reasons) == {"rise", "aab"}

