"""The Spark match stage with many patterns (the session's local Spark): its generated Java
stays within the JVM's 64 KB per method, so Spark keeps whole-stage code generation (it
used to log "Code grows beyond 64 KB" for 60 patterns and compile the stage again without
it); the rows' pattern and tag flags, now read off their tags in the groups, equal a plain
Python reading; and the shuffle plan's matches equal the local engine's."""

from __future__ import annotations

import random

import pandas as pd
import pyarrow as pa
import pytest

from benchmarks.bench_sharing_engine import _common_prefix_workload, _synthetic_events
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.spark_job import run_job
from cepplan.engine_adapter.spark_match import Counts, Span, match, tag_flags
from cepplan.engine_adapter.spark_tags import TAGS, layout, tag_column
from cepplan.planner.plan import trivial_plan
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.loader import build_workload
from tests.engine.test_spark_job import read_matches

JVM_METHOD_BYTES = 64 * 1024


def test_tag_flags_equal_a_plain_reading():
    draw = random.Random(5)
    rows = [draw.sample(range(40), draw.randint(0, 4)) for _ in range(300)]
    owners = {"p0": [0, 1, 2], "p1": [7], "p2": list(range(10, 30))}  # 30-39: other schemes
    table = pa.table({TAGS: pa.array(rows, pa.list_(pa.int32()))})
    found = tag_flags(table, owners)
    for column, numbers in owners.items():
        assert found[column].tolist() == [bool(set(r) & set(numbers)) for r in rows], column
    assert tag_flags(table, {}) == {}


@pytest.fixture()
def sixty(tmp_path):
    """60 patterns (240 tags) on one common prefix: the job data and 3 s of their events."""
    wl = build_workload(_common_prefix_workload(60))
    return job_data(wl, trivial_plan(wl)), _synthetic_events(wl, tmp_path, seconds=3.0)


def test_sixty_patterns_compile_within_the_jvm_method_limit(spark, sixty):
    data, path = sixty
    job = job_from_json(data)
    plan = layout(job, data)
    events = pd.read_csv(path).rename(columns={"type": EVENT_TYPE, "ts": EVENT_TS})
    events[EVENT_ID] = range(len(events))
    rows = spark.createDataFrame(events)
    pool = rows.select("*", tag_column(job, plan, list(plan.tags), rows.columns).alias(TAGS)) \
        .persist()  # cached as the job caches it (a local relation would be folded away)
    pool.count()
    span = Span(float(events[EVENT_TS].min()), float(events[EVENT_TS].max()), len(events),
                spark.sparkContext.defaultParallelism)
    counts = spark.sparkContext.accumulator({}, Counts())
    found = match(pool, plan, (), list(plan.levels[0]), data, span, {}, counts)
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # the plan's stages, not AQE's
    try:
        generated = found._jdf.queryExecution().debug().codegenToSeq()
        sizes = [generated.apply(i)._3().maxMethodCodeSize() for i in range(generated.size())]
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
        pool.unpersist()
    assert sizes and all(0 < size < JVM_METHOD_BYTES // 4 for size in sizes), sizes  # -1: failed


def test_sixty_patterns_on_the_shuffle_plan_equal_the_local_engine(spark, sixty, tmp_path,
                                                                   monkeypatch):
    data, path = sixty
    monkeypatch.setenv("CEPPLAN_SPARK_RANGES", "0")
    remote = run_job(spark, data, [str(path)], str(tmp_path / "spark"), say=lambda _: None)
    local = run_local_job(data, [str(path)], tmp_path / "local", say=lambda _: None)
    assert remote["spark_plan"] == "shuffle"
    assert read_matches(tmp_path / "spark") == read_matches(tmp_path / "local")
    assert remote["matches"] == local["matches"]
    assert remote["rows_to_matchers_by_pattern"] == local["rows_to_matchers_by_pattern"]
    assert sum(local["matches"].values()) > 100
