"""After-match skips on the Spark stream's stateful step (`stream_state.StreamStep`, run here
as Spark runs it per micro-batch, its state through Spark's group state, a micro-batch run
twice as after a failure before its commit): whatever the arrival order within `max_delay`
and however the arrivals are cut into micro-batches, the matches kept are the reference's
(the batch run's), and the figures count those the skips dropped."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.planner.plan import trivial_plan
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_spark_stream_plans import _batches, _run
from tests.engine.test_stream_after_match import EVENT, kept_by_reference, patterns
from tests.engine.test_stream_matches import arrivals
from tests.engine.workloads import workload


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=24), delay=st.sampled_from([0.0, 1.0]),
       every=st.integers(2, 5), replay=st.integers(0, 4), seed=st.integers(0, 100))
def test_spark_stream_skips_equal_reference(rows, delay, every, replay, seed):
    arrived = arrivals(frame(sorted(rows, key=lambda r: r[1])), delay, seed)
    wl = workload(patterns(True), csv=True)
    data = job_data(wl, trivial_plan(wl))
    data["options"]["max_delay"] = delay
    with tempfile.TemporaryDirectory() as folder:
        batches = _batches(arrived, list(range(every, len(rows), every)), {}, Path(folder),
                           wl)
    found, figures = _run(data, batches, replay)
    want, dropped = kept_by_reference(arrived)
    assert found == want
    assert figures["after_match_skipped"] == dropped
