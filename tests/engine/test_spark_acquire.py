"""Acquisition on Spark (pre-filter before the shuffle, exact semi-joins in the match groups)
against the in-process engine's semi-joins over the whole pool: the same rows to every
matcher and the same matches, over many keys and many overlapping time ranges."""

from __future__ import annotations

import random

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.spark import acquire as spark_acquire
from cepplan.engine_adapter.spark.job import _read_and_tag, run_job
from cepplan.engine_adapter.spark.match import Counts
from cepplan.engine_adapter.spark.tags import TAGS, layout
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload
from tests.engine.example_data import stepwise_plan
from tests.engine.test_local_engine import SAME, read_matches
from tests.engine.test_matcher_vs_reference import frame


def acquisition_workload():
    """A three-step SEQ and a two-step AND keyed by `k`, an unkeyed SEQ; short windows over
    a long stream, so the match groups' ranges are many and their margins matter."""
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "kind",
                   "time_column": "ts", "id_column": "id"},
        "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                        for t in "ABCD"},
        "patterns": [
            {"name": "chain", "structure": ["SEQ", "a:A", "b:B", "c:C"],
             "where": ["a.v < c.v"], "partition_by": ["k"], "within": "4s"},
            {"name": "pair", "structure": ["AND", "x:D", "y:B"], "partition_by": ["k"],
             "within": "2s"},
            {"name": "loose", "structure": ["SEQ", "p:C", "q:D"], "within": "1s"}]})


def stream(seed: int, count: int) -> list[tuple]:
    """Events over 0 … 1,000 s, half-second ticks (ties), three keys, a few without a key:
    about one event per 5 s and key, so later steps find their anchors only now and then."""
    rng = random.Random(seed)
    return [(rng.choice("AAABBCCCCDD"), rng.randint(0, 2000) / 2, rng.randint(0, 9),
             rng.choice([0.5, 2.0]), rng.choice(["k1", "k2", "k3", "k1", "k2", "k3", ""]))
            for _ in range(count)]


def test_spark_sends_what_the_whole_pool_acquisition_sends(spark, tmp_path):
    workload = acquisition_workload()
    path = tmp_path / "events.csv"
    write_events(frame(stream(5, 700)), workload, path)
    data = job_data(workload, stepwise_plan(workload))
    local = run_local_job(data, [str(path)], tmp_path / "local", say=lambda _: None)
    remote = run_job(spark, data, [str(path)], str(tmp_path / "spark"), say=lambda _: None)
    assert {k: local[k] for k in SAME} == {k: remote[k] for k in SAME}
    assert read_matches(tmp_path / "local") == read_matches(tmp_path / "spark")
    assert all(local["matches"].values()), local["matches"]  # each pattern has matches
    trivial = run_local_job(job_data(workload, trivial_plan(workload)), [str(path)],
                            tmp_path / "trivial", say=lambda _: None)
    assert local["rows_to_matchers"] < trivial["rows_to_matchers"]  # the steps drop rows


def test_prefilter_drops_only_tags_acquisition_drops(spark, tmp_path):
    """Tags left by the pre-filter ⊇ tags the exact semi-joins keep; and it drops some."""
    workload = acquisition_workload()
    path = tmp_path / "events.csv"
    write_events(frame(stream(9, 700)), workload, path)
    data = job_data(workload, stepwise_plan(workload))
    job = job_from_json(data)
    plan = layout(job, data)
    counts = spark.sparkContext.accumulator({}, Counts())
    pool, _, _ = _read_and_tag(spark, data, [str(path)], job, plan, counts)
    before = {r["__id"]: set(r[TAGS]) for r in pool.select("__id", TAGS).collect()}
    after = {r["__id"]: set(r[TAGS]) for r in spark_acquire.prefilter(
        pool, plan, plan.levels[0], len(before)).select("__id", TAGS).collect()}
    run_local_job(data, [str(path)], tmp_path / "local", say=lambda _: None)
    kept = exact_tags(tmp_path / "local", plan)
    assert all(kept.get(i, set()) <= after[i] <= before[i] for i in before)
    assert sum(map(len, after.values())) < sum(map(len, before.values()))


def exact_tags(out, plan) -> dict[int, set[int]]:
    """Per event id, the tags some match binds it to (a subset of what acquisition keeps)."""
    found: dict[int, set[int]] = {}
    for name, matches in read_matches(out).items():
        spec = next(p for level in plan.levels for p in level if p.name == name)
        for _, bound in matches:  # canonical: (pattern, ((var, ((type, id), ...)), ...))
            for var, events in bound:
                for _, event_id in events:
                    found.setdefault(event_id, set()).add(plan.tag(spec, var).index)
    return found
