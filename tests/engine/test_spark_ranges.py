"""The Spark job's range-local plan (`spark.ranges`): each task matches its own byte range of a
time-ordered file. With ranges of a few hundred bytes (boundaries inside windows and inside
runs of equal timestamps) it gives the in-process engine's matches, row ids and counts; an
unordered file falls back to the shuffle plan with the same results."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.spark import ranges as spark_ranges
from cepplan.engine_adapter.spark import read as spark_read
from cepplan.engine_adapter.spark.job import run_job
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload, load_workload
from tests.engine.example_data import EXAMPLES, stepwise_plan
from tests.engine.parquet_reference import expected_rows, json_matches, parquet_rows
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_local_engine import SAME, read_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import TEMPLATES, TYPES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tiny_ranges(monkeypatch):
    """Byte ranges of `size` bytes and margins guessed at 64 bytes (doubled as needed)."""
    def cut(size: int) -> None:
        monkeypatch.setattr(spark_read, "MIN_SPLIT_BYTES", 1)
        monkeypatch.setattr(spark_read, "SPLIT_BYTES", size)
    monkeypatch.setattr(spark_ranges, "FIRST_MARGIN_BYTES", 64)
    return cut


def both(spark, data, path, tmp_path, name: str) -> tuple[dict, dict]:
    """(the in-process engine's metrics, the Spark job's), outputs under tmp_path/name-*."""
    local = run_local_job(data, [str(path)], tmp_path / f"{name}-local", say=lambda _: None)
    remote = run_job(spark, data, [str(path)], str(tmp_path / f"{name}-spark"),
                     say=lambda _: None)
    assert {k: local[k] for k in SAME} == {k: remote[k] for k in SAME}, name
    assert read_matches(tmp_path / f"{name}-local") == read_matches(
        tmp_path / f"{name}-spark"), name
    return local, remote


@pytest.mark.parametrize(("example", "kinds"), [("fraud", ("trivial", "steps")),
                                               ("stocks", ("trivial", "steps")),
                                               ("trading_rules", ("trivial",))])
def test_examples_equal_the_local_engine(spark, tmp_path, tiny_ranges, example, kinds):
    """The bundled CSV examples the range-local plan takes (all are in time order; network's
    hierarchy and traffic's contexts take the shuffle plan, tested in test_spark_job and
    tests/contexts), cut into a dozen ranges: equal to the in-process engine. Boundaries at
    every tie are the random streams' test; each range is a task that sets up every pattern
    (51 for trading_rules), so cutting the examples finer costs seconds per range."""
    workload = load_workload(EXAMPLES / example / "workload.json")
    path = EXAMPLES / example / "events.csv"
    tiny_ranges(max(256, path.stat().st_size // 12))
    plans = {"trivial": trivial_plan(workload), "steps": stepwise_plan(workload)}
    for kind in kinds:
        local, remote = both(spark, job_data(workload, plans[kind]), path, tmp_path, kind)
        assert remote["spark_plan"] == "range-local", kind
        assert sum(local["matches"].values()) > 0


def tie_workload():
    """The property templates without the hierarchy (patterns over patterns' matches use the
    shuffle plan), one of them keyed."""
    patterns = [{**p, "name": name} for name, template in sorted(TEMPLATES.items())
                if name not in ("hierarchy", "or_filter") for p in template]
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "kind",
                   "time_column": "ts"},
        "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                        for t in TYPES},
        "options": {"kleene_cap": 30, "seq_ties": "allow"}, "patterns": patterns})


@pytest.mark.parametrize("seed", [1, 2])
def test_random_streams_with_ties_at_every_boundary(spark, tmp_path, tiny_ranges, seed):
    """Random streams where most timestamps repeat (runs of equal times cut by range
    boundaries), negation, Kleene, keys, the many-step plan; ranges of 60-150 bytes: the
    in-process engine's matches and counts, and the brute-force reference's matches."""
    rng = random.Random(seed)
    times = sorted(rng.randint(0, 75) for _ in range(150))
    rows = [(rng.choice(TYPES), t, rng.randint(0, 4), rng.choice([0.5, 2.0, 3.5, 5.0]),
             rng.choice("xy")) for t in times]
    workload = tie_workload()
    path = tmp_path / "events.csv"
    write_events(frame(rows), workload, path)
    tiny_ranges(rng.choice([60, 100, 150]))
    assert len(spark_ranges.regions(job_data(workload, trivial_plan(workload)), [str(path)],
                                    2)) > 15
    expected = {p: sorted(map(canonical, m))
                for p, m in reference_matches(workload, frame(rows)).items()}
    for kind, plan in (("trivial", trivial_plan(workload)), ("steps", stepwise_plan(workload))):
        local, remote = both(spark, job_data(workload, plan), path, tmp_path, kind)
        assert remote["spark_plan"] == "range-local", kind
        assert sum(1 for n in local["matches"].values() if n) >= len(local["matches"]) // 2
        got = read_matches(tmp_path / f"{kind}-spark")  # and the brute-force reference's
        assert {p: got.get(p, []) for p in expected} == expected, kind


def test_unordered_input_falls_back_to_the_shuffle_plan(spark, tmp_path, tiny_ranges):
    """The fraud events with a few rows moved late: the attempt is dropped (nothing left of
    it beside --out), the shuffle plan runs and gives the in-process engine's results."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    lines = (EXAMPLES / "fraud" / "events.csv").read_text().splitlines(True)
    body = lines[1:]
    for at in (300, 2000, 5000):
        body.insert(at + 700, body.pop(at))
    path = tmp_path / "late.csv"
    path.write_text(lines[0] + "".join(body))
    tiny_ranges(32 << 10)  # a dozen ranges, each displaced row in another one
    _, remote = both(spark, job_data(workload, trivial_plan(workload)), path, tmp_path, "late")
    assert remote["spark_plan"] == "shuffle"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_blank_lines_and_crlf(spark, tmp_path, tiny_ranges):
    """Blank lines (the driver counts lines, the tasks rows: the ranges run again with the
    tasks' counts) and CRLF line ends: the in-process engine's row ids and matches, as JSON
    lines and as Parquet. A lone CR (the reader would end a line there) is not counted."""
    workload = build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "kind",
                   "time_column": "ts"},
        "event_types": {t: {"attributes": {"v": "long"}} for t in TYPES},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"],
                      "where": ["a.v < b.v"], "within": 4}]})
    rng = random.Random(4)
    lines = [f"{rng.choice(TYPES)},{i // 3},{rng.randint(0, 4)}" for i in range(300)]
    lines[40:42] = ["", ""]
    text = "kind,ts,v\n" + "\n".join(lines[:150]) + "\r\n" + "\r\n".join(lines[150:])
    path = tmp_path / "events.csv"
    path.write_bytes(text.encode())
    tiny_ranges(97)
    data = job_data(workload, trivial_plan(workload))
    found = spark_ranges.regions(data, [str(path)], 2)
    assert sum(r.rows for r in found) == 300 and len(found) > 20
    assert all(a.end == b.start for a, b in itertools.pairwise(found))
    local, remote = both(spark, data, path, tmp_path, "blank")
    assert remote["spark_plan"] == "range-local" and local["rows_read"] == 298
    assert local["matches"]["p"] > 20
    parquet = run_job(spark, data, [str(path)], str(tmp_path / "parquet"),
                      output_format="parquet", say=lambda _: None)
    assert parquet["spark_plan"] == "range-local"
    assert parquet_rows(tmp_path / "parquet", workload) == expected_rows(
        workload, json_matches(tmp_path / "blank-spark"), None)
    path.write_bytes(text.replace("\r\n", "\r", 1).encode())
    assert spark_ranges.regions(data, [str(path)], 2) is None


def test_a_range_task_imports_no_pandas():
    """A range-local task (each Python worker imports what it runs) loads the in-process
    engine's modules only: pandas, which the shuffle plan's stages use, would cost every
    worker a quarter of a second of CPU at its start."""
    task_modules = ["cepplan.engine_adapter.spark.ranges", "cepplan.engine_adapter.runtime.job",
                    "cepplan.engine_adapter.runtime.shared_nodes",
                    "cepplan.engine_adapter.local.range_match",
                    "cepplan.engine_adapter.local.totals", "cepplan.engine_adapter.local.writer",
                    "cepplan.engine_adapter.local.source"]
    code = "".join(f"import {m}\n" for m in task_modules) + "import sys\n" \
        "print('pandas' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "False"
