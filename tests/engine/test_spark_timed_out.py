"""Timed-out partial matches on the Spark job: every template of the in-process tests, in
one job over a keyed stream full of equal timestamps, under the trivial and a many-step plan,
equal the brute-force reference written from their definition; the patterns' own matches are
unchanged, and metrics.json counts the timed-out ones per prefix length."""

from __future__ import annotations

import json
import random

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine import workloads
from tests.engine.example_data import stepwise_plan
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.reference_timed_out import timed_out_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_timed_out import SEQUENCES
from tests.engine.workloads import TYPES


def timed_out_workload(timed_out: bool):
    """Each template as pattern NAME, with or without `timed_out`."""
    return workloads.workload(
        [spec | {"name": name} | ({"timed_out": True} if timed_out else {})
         for name, spec in sorted(SEQUENCES.items())], seq_ties="allow", csv=True)


def written(folder) -> list[tuple]:
    """Every line under OUT/matches/ and OUT/timed_out/: (pattern, its timed_out object or
    None, canonical); the matches' folder holds no timed-out partial match and the other
    nothing else."""
    out = []
    for kind in ("matches", "timed_out"):
        for part in sorted((folder / kind).iterdir()):
            if not part.name.startswith((".", "_")):
                for line in part.read_text().splitlines():
                    obj = json.loads(line)
                    timed = obj.get("timed_out")
                    assert (timed is not None) == (kind == "timed_out"), (kind, obj)
                    out.append((obj["pattern"], timed and (timed["k"], timed["at"]),
                                canonical(obj)))
    return sorted(out, key=repr)


def test_spark_timed_out_equals_reference(spark, tmp_path):
    rng = random.Random(5)
    rows = [(rng.choice(TYPES), rng.randint(0, 14), rng.randint(0, 4),
             rng.choice([0.5, 2.0]), rng.choice("xyz")) for _ in range(40)]
    plain, events = timed_out_workload(False), frame(rows)
    workload = timed_out_workload(True)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    full = reference_matches(plain, events)
    expected, counts = [], {}
    for name in SEQUENCES:
        expected += [(name, None, canonical(m)) for m in full[name]]
        for m in timed_out_matches(plain, name, events):
            k = m["timed_out"]["k"]
            expected.append((name, (k, m["timed_out"]["at"]), canonical(m)))
            counts.setdefault(name, {}).setdefault(str(k), 0)
            counts[name][str(k)] += 1
    expected.sort(key=repr)
    assert sum(1 for e in expected if e[1]) >= 10, "too few timed-out matches to compare"
    for kind, plan in (("trivial", trivial_plan(workload)), ("steps", stepwise_plan(workload))):
        metrics = run_job(spark, job_data(workload, plan), [str(path)], str(tmp_path / kind),
                          say=lambda _: None)
        assert written(tmp_path / kind) == expected, kind
        assert {n: {k: c for k, c in by_k.items() if c}
                for n, by_k in metrics["timed_out"].items()} == counts, kind


def test_spark_stream_writes_them_in_their_own_output(tmp_path):
    """`cepplan run --follow DIR --engine spark`: the sink's `output=timed_out/` holds the
    batch run's timed-out partial matches (the reference's), `output=matches/` its matches,
    neither the other's lines."""
    from collections import Counter

    from tests.engine.test_spark_stream import _committed
    from tests.engine.test_timed_out import drop, followed_run, reference_timed_out
    from tests.in_process import cepplan

    events, files = followed_run(tmp_path)
    source = tmp_path / "in"
    source.mkdir()
    for name, text in files:
        drop(source, name, text)
    (source / "_END").touch()
    done = cepplan("run", "plan.json", "--follow", "in", "--engine", "spark", "-o", "out",
                   "-q", "--trigger", "0.5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for folder in ("matches", "timed_out"):
        batch = (tmp_path / "batch" / folder / "part-00000.jsonl").read_text().splitlines()
        assert Counter(_committed(tmp_path / "out", folder)) == Counter(batch), folder
    timed = sorted((m["timed_out"]["k"], m["timed_out"]["at"], canonical(m))
                   for m in map(json.loads, _committed(tmp_path / "out", "timed_out")))
    assert timed == reference_timed_out(events) and len(timed) > 20


def test_generated_job_writes_them_in_their_own_folder(tmp_path):
    """The standalone job of `cepplan generate`, run by spark-submit: OUT/timed_out/ holds
    the in-process batch run's timed-out partial matches (the reference's), OUT/matches/ its
    matches, neither the other's lines."""
    from collections import Counter

    from cepplan.engine_adapter.spark.generate import generate
    from cepplan.engine_adapter.spark.submit import submit
    from cepplan.workload import load_workload
    from tests.engine.test_timed_out import followed_run, reference_timed_out

    events, _ = followed_run(tmp_path)
    workload = load_workload(tmp_path / "workload.json")
    job = generate(workload, trivial_plan(workload), tmp_path / "job")
    submit(job, [str(tmp_path / "events.csv")], tmp_path / "out", master="local[2]",
           quiet=True, conf={"spark.ui.enabled": "false"})
    for folder in ("matches", "timed_out"):
        lines = [line for part in sorted((tmp_path / "out" / folder).glob("part-*.jsonl"))
                 for line in part.read_text().splitlines()]
        batch = (tmp_path / "batch" / folder / "part-00000.jsonl").read_text().splitlines()
        assert Counter(lines) == Counter(batch), folder
    timed = [(k, at, c) for _, (k, at), c in (e for e in written(tmp_path / "out") if e[1])]
    assert sorted(timed) == reference_timed_out(events)
