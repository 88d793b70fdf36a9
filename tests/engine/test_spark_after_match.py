"""After-match skips on the Spark job: every template of the in-process tests under one skip
each, in one job over a stream with equal timestamps and two keys, read in time order (by
range) and out of it (after a shuffle), under the trivial and a many-step plan, equal the
brute-force reference; the same patterns without a skip keep every match."""

from __future__ import annotations

import random

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.example_data import stepwise_plan
from tests.engine.reference_after_match import reference_skip
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_after_match import TEMPLATES
from tests.engine.test_local_engine import read_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import TYPES, workload

SKIPS = {"seq_keyed": {"to_last": "b"}, "kleene": {"to_first": "b"},
         "alternation_optional": "past_last_event", "and_keyed": "to_next_event"}


def patterns(with_skip: bool) -> list[dict]:
    out = []
    for name, (template, _) in sorted(TEMPLATES.items()):
        skip = {"after_match": SKIPS[name]} if with_skip else {}
        out += [{"name": name, **template, **skip}, {"name": f"{name}_all", **template}]
    return out


@pytest.mark.parametrize("ordered", [True, False])
def test_spark_skips_equal_reference(spark, tmp_path, ordered):
    rng = random.Random(0)
    rows = [(rng.choice(TYPES), rng.randint(0, 16), rng.randint(0, 4), rng.choice([0.5, 2.0]),
             rng.choice("xy")) for _ in range(45)]
    events = frame(sorted(rows, key=lambda r: r[1]) if ordered else rows)
    wl = workload(patterns(True), csv=True)
    path = tmp_path / "events.csv"
    write_events(events, wl, path)
    plain = workload(patterns(False))
    found: dict[str, dict] = {}
    for core, matches in reference_matches(plain, events).items():
        name = plain.pattern(core).output_name
        for match in matches:
            match = {**match, "pattern": name}
            found.setdefault(name, {})[canonical(match)] = match
    expected = {}
    for name, (template, _) in TEMPLATES.items():
        every = list(found.get(name, {}).values())
        kept = reference_skip(every, SKIPS[name], template.get("partition_by", []))
        assert len(kept) < len(every), name
        expected[name] = sorted(map(canonical, kept))
        expected[f"{name}_all"] = sorted(found.get(f"{name}_all", {}))
    for kind, plan in (("trivial", trivial_plan(wl)), ("steps", stepwise_plan(wl))):
        metrics = run_job(spark, job_data(wl, plan), [str(path)], str(tmp_path / kind),
                          say=lambda _: None)
        got = read_matches(tmp_path / kind)
        assert {k: got.get(k, []) for k in expected} == expected, kind
        assert metrics["after_match_skipped"] == {
            name: len(found[name]) - len(expected[name]) for name in TEMPLATES}, kind
