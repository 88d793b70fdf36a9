"""The Spark job runs the context stage (real local Spark): on the traffic example and on
random streams it writes the in-process engine's matches (and, on the random streams, the
brute-force reference's), with the same counts and the same metrics.json `contexts`."""

from __future__ import annotations

import json
import random
from pathlib import Path

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload
from tests.contexts.context_workloads import TYPES, frame, write_csv
from tests.contexts.reference_contexts import reference_context_matches
from tests.contexts.test_engine_vs_reference import EAGER, WORKLOAD
from tests.contexts.test_local_engine_contexts import TRAFFIC, _sorted
from tests.engine.reference_matcher import canonical

SAME = ("rows_read", "rows_rejected", "rows_to_matchers", "rows_to_matchers_by_pattern",
        "matches", "kleene_cap_hits", "contexts")


def written_matches(out: Path) -> dict[str, list]:
    """The matches in `out/matches/part-*` (either engine), canonical, per pattern."""
    got: dict[str, list] = {}
    for part in (out / "matches").glob("part-*"):
        for line in part.read_text().splitlines():
            obj = json.loads(line)
            got.setdefault(obj["pattern"], []).append(canonical(obj))
    return {name: sorted(found) for name, found in got.items()}


def _both(spark, data: dict, files: list[str], where: Path) -> tuple[dict, dict]:
    """Metrics of the in-process engine and of the Spark job on the same job and files."""
    local = run_local_job(data, files, where / "local", say=lambda _: None)
    remote = run_job(spark, data, files, str(where / "spark"), say=lambda _: None)
    return local, remote


def test_traffic_example_on_spark_equals_the_local_engine(spark, tmp_path):
    workload = load_workload(TRAFFIC / "workload.json")
    data = job_data(workload, optimize(workload, workload.statistics, Settings()).plan)
    local, remote = _both(spark, data, [str(TRAFFIC / "events.csv")], tmp_path)
    assert written_matches(tmp_path / "spark") == written_matches(tmp_path / "local")
    for key in SAME:
        assert remote[key] == local[key], key
    section = remote["contexts"]["patterns"]
    assert section["toll"]["rows_seen"] < 0.7 * section["toll"]["rows_of_its_types"]
    assert 0 < sum(remote["matches"].values()) < 1000  # 123,651 without contexts


def test_random_streams_on_spark_equal_local_and_reference(spark, tmp_path):
    draw = random.Random(12)
    for case, workload in enumerate([WORKLOAD, EAGER]):
        rows = [(draw.choice(TYPES), draw.randint(0, 14), draw.randint(0, 5),
                 draw.choice("xy")) for _ in range(60)]
        events = frame(rows)
        path = tmp_path / f"events{case}.csv"
        write_csv(events, path)
        where = tmp_path / str(case)
        local, remote = _both(spark, job_data(workload, trivial_plan(workload)), [str(path)],
                              where)
        written = written_matches(where / "spark")
        assert written == written_matches(where / "local"), case
        assert written == _sorted(reference_context_matches(workload, events)), case
        for key in SAME:
            assert remote[key] == local[key], (case, key)
