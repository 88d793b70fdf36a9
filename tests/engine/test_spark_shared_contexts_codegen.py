"""The Spark match stage with many patterns (the session's local Spark): its generated Java
stays within the JVM's 64 KB per method, so Spark keeps whole-stage code generation (it
used to log "Code grows beyond 64 KB" for 60 patterns and compile the stage again without
it), with and without acquisition steps; the rows' pattern and tag flags, now read off their
tags in the groups, equal a plain Python reading; the pre-filter's compact verdicts equal
one test per tag; and the shuffle plan's matches equal the local engine's."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from benchmarks.bench_sharing_engine import _common_prefix_workload, _synthetic_events
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.spark import acquire as spark_acquire
from cepplan.engine_adapter.spark import tags as spark_tags
from cepplan.engine_adapter.spark.job import _read_and_tag, run_job
from cepplan.engine_adapter.spark.match import Counts, Span, match, tag_flags
from cepplan.engine_adapter.spark.tags import TAGS, layout
from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.workload.columns import EVENT_ID
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


def _prefix(n: int, where):
    """`n` patterns (4n tags) on one common prefix planned by the optimizer (4 acquisition
    steps each: 3n tested tags), and 3 s of their events."""
    wl = build_workload(_common_prefix_workload(n))
    data = job_data(wl, optimize(wl, wl.statistics, Settings()).plan)
    assert {len(p["steps"]) for p in data["patterns"]} == {4}
    return data, _synthetic_events(wl, where, seconds=3.0)


@pytest.fixture(scope="module")
def sixty(tmp_path_factory):
    return _prefix(60, tmp_path_factory.mktemp("sixty"))


def tagged_rows(spark, data: dict, path):
    """The job's layout, the tagged pool as the job reads and caches it, and its span."""
    job = job_from_json(data)
    plan = layout(job, data)
    pool, _, figures = _read_and_tag(spark, data, [str(path)], job, plan,
                                     spark.sparkContext.accumulator({}, Counts()))
    span = Span(figures.first, figures.last, figures.tagged,
                spark.sparkContext.defaultParallelism)
    return plan, pool, span


def test_sixty_patterns_compile_within_the_jvm_method_limit(spark, sixty):
    """The pre-filter (180 tested tags) and the match stage (240 tags) of one stage."""
    data, path = sixty
    plan, pool, span = tagged_rows(spark, data, path)
    level = plan.levels[0]
    found = match(spark_acquire.prefilter(pool, plan, level, span.rows), plan, (), list(level),
                  data, span, {}, spark.sparkContext.accumulator({}, Counts()))
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # the plan's stages, not AQE's
    try:
        generated = found._jdf.queryExecution().debug().codegenToSeq()
        sizes = [generated.apply(i)._3().maxMethodCodeSize() for i in range(generated.size())]
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
        pool.unpersist()
    assert sizes and all(0 < size < JVM_METHOD_BYTES // 4 for size in sizes), sizes  # -1: failed


def test_many_tested_tags_keep_what_one_test_per_tag_keeps(spark, tmp_path, monkeypatch):
    """The pre-filter's verdicts by one `filter` over each row's tags (18 tested tags, more
    than `FEW_TAGS`) equal those of one generated test per tag, and drop some tags."""
    assert spark_tags.FEW_TAGS < 18
    data, path = _prefix(6, tmp_path)
    plan, pool, span = tagged_rows(spark, data, path)

    def tags_by_id() -> dict[int, list[int]]:
        frame = spark_acquire.prefilter(pool, plan, plan.levels[0], span.rows)
        return {r[EVENT_ID]: sorted(r[TAGS]) for r in frame.select(EVENT_ID, TAGS).collect()}

    before = {r[EVENT_ID]: sorted(r[TAGS]) for r in pool.select(EVENT_ID, TAGS).collect()}
    compact = tags_by_id()
    monkeypatch.setattr(spark_acquire, "FEW_TAGS", 10**6)
    monkeypatch.setattr(spark_tags, "FEW_TAGS", 10**6)
    one_by_one = tags_by_id()
    pool.unpersist()
    assert compact == one_by_one
    assert sum(map(len, compact.values())) < sum(map(len, before.values()))


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
