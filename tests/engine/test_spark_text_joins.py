"""A join on a string id on both engines (docs/matching.md, "Indexed joins"): the Spark job
runs the matcher's look-up by text codes in its tasks, and finds the brute-force reference's
matches, as the in-process engine does, on a window dense enough to narrow."""

from __future__ import annotations

import random

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine import workloads
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_spark_job import plans_equal_expected


def test_a_string_id_join_on_both_engines(spark, tmp_path):
    """SEQ(a:A, b:B) with a.k == b.k over 400 events in one window, 30 ids (unicode among
    them): a look-up's range holds about 100 candidates, of which the id keeps 3 or 4."""
    rng = random.Random(4)
    ids = [f"u{n}" for n in range(27)] + ["日本", "é", "e\u0301"]
    rows = [(rng.choice("AB"), rng.randint(0, 20), rng.randint(0, 4), 1.0, rng.choice(ids))
            for _ in range(400)]
    wl = workloads.workload([{"name": "p", "structure": ["SEQ", "a:A", "b:B"],
                              "where": ["a.k == b.k", "a.v <= b.v"], "within": 30}], csv=True)
    events = frame(rows)
    expected = {name: sorted(map(canonical, found))
                for name, found in reference_matches(wl, events).items()}
    assert len(expected["p"]) > 100
    local = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
    assert sorted(map(canonical, local.matches["p"])) == expected["p"]
    path = tmp_path / "events.csv"
    write_events(events, wl, path)
    for metrics in plans_equal_expected(spark, wl, path, expected, tmp_path):
        assert metrics["engine"] == "spark"
