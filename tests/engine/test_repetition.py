"""Bounded repetition (`["KLEENE", "b:B", {"min": n, "max": m}]`, SQL's `B{n,m}`, FlinkCEP's
`times(n, m)`): a worked case (the property tests over every construct: test_constructs.py)."""

from __future__ import annotations

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from tests.engine.constructs import REPETITIONS
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import workload


def test_worked_case_counts_the_sets_of_each_size():
    """A(0) then B at 1, 2, 3: SEQ(a, b{2,3}) has the 3 pairs and the one triple of B."""
    rows = [("A", 0, 0, 0.5, "x"), ("B", 1, 1, 0.5, "x"), ("B", 2, 1, 0.5, "x"),
            ("B", 3, 1, 0.5, "x")]
    wl = workload(REPETITIONS["two_to_three"])
    result = run_local(frame(rows), job_from_json(job_data(wl, trivial_plan(wl))))
    sizes = sorted(len(m["events"]["b"]) for m in result.matches["p"])
    assert sizes == [2, 2, 2, 3]
