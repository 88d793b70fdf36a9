"""Alternation, optional variables and bounded repetition on the Spark job: every template of the
in-process tests in one job over a stream full of equal timestamps, under the trivial and a
many-step plan, equals the brute-force reference reading each variable's types, optionality and
bounds from the definition; every match is written once, under the user's pattern name."""

from __future__ import annotations

import random

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine import workloads
from tests.engine.constructs import (
    ALTERNATIONS,
    OPTIONALS,
    REPETITIONS,
    ZERO_OR_MORE_FIRST,
    user_workload,
)
from tests.engine.example_data import stepwise_plan
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.reference_strategies import strategy_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_spark_job import read_matches
from tests.engine.workloads import TYPES


def random_events(workload, path, *, seed: int, latest: int):
    """40 events of random types, times 0..`latest` (ties), values and labels, written to
    `path` as the workload reads them; the frame the reference matchers take."""
    rng = random.Random(seed)
    events = frame([(rng.choice(TYPES), rng.randint(0, latest), rng.randint(0, 4),
                     rng.choice([0.5, 2.0]), rng.choice("xy")) for _ in range(40)])
    write_events(events, workload, path)
    return events


def test_spark_alternation_equals_reference(spark, tmp_path):
    patterns = [{**template, "name": name}
                for name, (template,) in (ALTERNATIONS | OPTIONALS | REPETITIONS).items()]
    workload = workloads.workload(patterns, seq_ties="allow", csv=True)
    path = tmp_path / "events.csv"
    events = random_events(workload, path, seed=5, latest=10)
    expected = {name: sorted(map(canonical, found)) for name, found
                in reference_matches(user_workload(patterns, "allow"), events).items()}
    assert sum(1 for found in expected.values() if found) >= len(expected) - 1
    for kind, plan in (("trivial", trivial_plan(workload)), ("steps", stepwise_plan(workload))):
        metrics = run_job(spark, job_data(workload, plan), [str(path)], str(tmp_path / kind),
                          say=lambda _: None)
        got = read_matches(tmp_path / kind)
        assert {k: got.get(k, []) for k in expected} == expected, kind
        assert sum(metrics["matches"].values()) == sum(map(len, expected.values())), kind


def test_spark_strict_zero_or_more_equals_reference(spark, tmp_path):
    """A KLEENE with min 0 under `strict` (MATCH_RECOGNIZE's `A B* C`) on the Spark job: the
    core patterns with and without b together find the strategy reference's matches."""
    patterns = [{**template, "name": name, "strategy": "strict"}
                for name, (template,) in (("middle", REPETITIONS["zero_or_more"]),
                                          ("first", ZERO_OR_MORE_FIRST))]
    workload = workloads.workload(patterns, seq_ties="allow", csv=True)
    path = tmp_path / "events.csv"
    events = random_events(workload, path, seed=11, latest=12)
    plain = [{k: v for k, v in p.items() if k != "strategy"} for p in patterns]
    expected = {name: sorted(map(canonical, found)) for name, found in strategy_matches(
        user_workload(plain, "allow"), dict.fromkeys(("middle", "first"), "strict"),
        events).items()}
    assert all(expected.values())
    run_job(spark, job_data(workload, trivial_plan(workload)), [str(path)],
            str(tmp_path / "out"), say=lambda _: None)
    got = read_matches(tmp_path / "out")
    assert {k: got.get(k, []) for k in expected} == expected
