"""Byte-range workers spawned before the plan is loaded (`local.standby`): they take the
ranges (no worker is spawned afresh) and give the files one process gives; left without a
range (input not read by byte range), they end."""

from __future__ import annotations

import gzip
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import engine, range_cut
from cepplan.engine_adapter.local.standby import Standby, standby_workers
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import load_workload
from tests.engine.example_data import EXAMPLES
from tests.engine.test_local_workers import _files

ROOT = Path(__file__).resolve().parents[2]


def _stocks(tmp_path: Path, name: str) -> tuple[dict, str]:
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    events = synthesize(workload, seed=5, truth_draws=1000, duration=360,
                        total_rate=1.0).events
    path = tmp_path / name
    write_events(events, workload, path)
    return job_data(workload, trivial_plan(workload)), str(path)


def _cepplan_workers() -> list:
    return [p for p in multiprocessing.active_children() if p.name.startswith("cepplan-")]


def _no_fresh_spawn(*_args, **_kwargs):
    raise AssertionError("a worker was spawned afresh: the standby ones were not taken")


def test_standby_workers_take_the_ranges(tmp_path, monkeypatch):
    monkeypatch.setattr(range_cut, "MIN_RANGE_BYTES", 1)
    data, path = _stocks(tmp_path, "events.csv")
    engine.run_local_job(data, [path], tmp_path / "w1", say=lambda _text: None)
    waiting = standby_workers([path], 3, "local", None)
    assert waiting is not None
    monkeypatch.setattr(multiprocessing.get_context("spawn"), "Process", _no_fresh_spawn)
    metrics = engine.run_local_job(data, [path], tmp_path / "w3", workers=3,
                                   say=lambda _text: None, standby=waiting)
    assert metrics["workers"] == 3
    assert metrics["reading"] == "by byte range in each worker"
    assert _files(tmp_path / "w3") == _files(tmp_path / "w1")
    assert not _cepplan_workers()


def test_standby_workers_without_a_range_end(tmp_path, monkeypatch):
    """A compressed file is read by cepplan alone: the standby workers end unused, and the
    run is the one-process run's."""
    monkeypatch.setattr(range_cut, "MIN_RANGE_BYTES", 1)
    data, path = _stocks(tmp_path, "events.csv")
    engine.run_local_job(data, [path], tmp_path / "plain", say=lambda _text: None)
    packed = tmp_path / "events.csv.gz"
    packed.write_bytes(gzip.compress(Path(path).read_bytes()))
    waiting = Standby(2)
    engine.run_local_job(data, [str(packed)], tmp_path / "packed", say=lambda _text: None,
                         standby=waiting)
    assert _files(tmp_path / "packed") == _files(tmp_path / "plain")
    assert not _cepplan_workers()


@pytest.mark.parametrize(("events", "workers", "engine_name"), [
    (["events.csv"], 1, "local"), (["events.csv", "events.csv"], 2, "local"),
    (["events.csv"], 2, "spark"), (["missing.csv"], 2, "local"), ([""], 2, "auto")])
def test_no_standby_where_no_byte_range_worker_can_run(tmp_path, monkeypatch, events, workers,
                                                       engine_name):
    """One worker, several files, Spark, a file that is not there: nothing spawned."""
    monkeypatch.setattr(range_cut, "MIN_RANGE_BYTES", 1)
    (tmp_path / "events.csv").write_text("type,ts\nA,1\n")
    paths = [str(tmp_path / e) if e else "" for e in events]
    assert standby_workers(paths, workers, engine_name, None) is None


_FORKED_COST = """
import resource, subprocess, sys
from cepplan.engine_adapter.local.standby import Standby

def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime

before = children_cpu()
subprocess.run([sys.executable, "-c", "import cepplan.engine_adapter.local.byte_ranges"],
               check=True)
fresh = children_cpu() - before
waiting = Standby(2)
before = children_cpu()
waiting.close()  # told to end and reaped: their CPU counted
print(fresh, children_cpu() - before)
"""


def test_standby_workers_do_not_import_the_engine_again():
    """A standby worker costs far less CPU than a fresh interpreter importing the engine (the
    reference, measured alongside): it is forked from cepplan once the engine is imported.
    Run in a fresh interpreter, with one thread as cepplan has (a test runner's threads
    would make it spawn)."""
    done = subprocess.run([sys.executable, "-c", _FORKED_COST], check=True, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    fresh, forked = map(float, done.stdout.split())
    assert forked < fresh / 2


def test_standby_workers_end_with_their_pipe(tmp_path):
    """A forked worker holds no copy of the parent's pipe ends: it ends when cepplan closes
    its pipe, without being told (as when cepplan ends)."""
    waiting = Standby(2)
    processes = [process for process, _ in waiting._waiting]
    for _, connection in waiting._waiting:
        connection.close()
    for process in processes:
        process.join(30)
    assert [process.exitcode for process in processes] == [0, 0]
