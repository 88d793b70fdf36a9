"""Matching in bounded pieces (docs/engine.md, "Memory"): with pieces of a row or a few, every
join step, Kleene+ enumeration and negation test split as far as it goes, the matches are
the brute-force reference's and come out in the unsplit run's very order; a `cepplan run`
that stopped at a memory budget now completes under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.stock_bars import write_bars, write_workload
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime import memory
from cepplan.engine_adapter.runtime.job import evaluate_partition, job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from tests.engine.reference_matcher import reference_matches
from tests.engine.test_matcher_vs_reference import EVENT, frame, same_matches, with_orders
from tests.engine.workloads import TEMPLATES, workload
from tests.in_process import cepplan

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("template", sorted(TEMPLATES))
@settings(max_examples=30)
@given(rows=st.lists(EVENT, max_size=14), chunk=st.integers(1, 8), piece=st.integers(1, 3),
       data=st.data())
def test_pieces_of_a_few_rows_give_the_reference_matches_in_the_unsplit_order(
        template, rows, chunk, piece, data):
    wl = workload(TEMPLATES[template], seq_ties=data.draw(st.sampled_from(["strict", "allow"])))
    events = frame(rows)
    job = job_from_json(job_data(wl, with_orders(trivial_plan(wl), wl, data)))
    whole = run_local(events, job, chunk_events=chunk)
    built = [_partials(events, job, spec, chunk) for spec in job.patterns]
    with pytest.MonkeyPatch.context() as patch:  # pieces of `piece` rows whatever the memory
        patch.setattr(memory, "MIN_PIECE_ROWS", piece)
        patch.setattr(memory, "MAX_PIECE_ROWS", piece)
        split = run_local(events, job, chunk_events=chunk)
        assert [_partials(events, job, spec, chunk) for spec in job.patterns] == built
    same_matches(split.matches, reference_matches(wl, events))
    assert split.matches == whole.matches  # same matches, same order
    assert split.cap_hits == whole.cap_hits and split.held_back == whole.held_back


def _partials(events, job, spec, chunk: int) -> list[int]:
    """The partial matches per join prefix one partition of the events builds (each counted
    once however the steps are split)."""
    if not len(events):
        return []
    return evaluate_partition(events, job, spec, chunk_events=chunk).partials


def test_row_budget_follows_the_memory_budget(monkeypatch):
    """A budget far above what the process holds: pieces of the most rows; at or under it:
    the fewest (and `check` then stops the run, one piece being more than fits)."""
    monkeypatch.setenv(memory.MEMORY_VARIABLE, "1T")
    assert memory.row_budget(3) == memory.MAX_PIECE_ROWS
    monkeypatch.setenv(memory.MEMORY_VARIABLE, "1M")
    assert memory.row_budget(3) == memory.MIN_PIECE_ROWS


GOOG_WINDOW = 60  # minutes: about 60 GOOG bars per window


def _run(tmp_path: Path, name: str, budget: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), memory.MEMORY_VARIABLE: budget}
    return subprocess.run([sys.executable, "-m", "cepplan", "run", str(tmp_path / "plan.json"),
                           "--events", str(tmp_path / "bars.csv"), "--out",
                           str(tmp_path / name)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_run_that_passed_the_budget_completes_under_it(tmp_path):
    """SEQ of three rising GOOG peaks over a 60-minute window (the issue's 143-minute row at
    a smaller scale): unsplit, one chunk of 400 triggers joins about 400 x 60 x 60 rows at
    once and passed a 300 MiB budget; in pieces it completes with its peak resident memory
    under the budget, the matches those of a run without a budget."""
    write_bars(tmp_path / "bars.csv", 4_000)
    wl = tmp_path / "workload.json"
    write_workload(wl, ["goog"])
    text = json.loads(wl.read_text())
    text["patterns"][0]["within"] = GOOG_WINDOW
    wl.write_text(json.dumps(text))
    assert cepplan("optimize", wl, "-o", tmp_path / "plan.json", "--quiet").returncode == 0
    free = _run(tmp_path, "free", "1T")
    assert free.returncode == 0, free.stderr
    bounded = _run(tmp_path, "bounded", "300M")
    assert bounded.returncode == 0, bounded.stderr
    metrics = json.loads((tmp_path / "bounded" / "metrics.json").read_text())
    assert metrics["peak_memory_bytes"] < 300 << 20
    assert metrics["chunk_splits"]["goog"] > 0
    assert metrics["matches"]["goog"] > 100_000
    lines = (tmp_path / "bounded" / "matches" / "part-00000.jsonl").read_bytes()
    assert lines == (tmp_path / "free" / "matches" / "part-00000.jsonl").read_bytes()


def test_peak_memory_is_the_programs_own(tmp_path):
    """metrics.json's peak memory is the run's own: a run started by a process that holds
    600 MB more (a test runner with a Spark session, a service) reported that process's
    memory as its peak (`ru_maxrss` carries it over into the child)."""
    held = bytearray(600 << 20)
    held[::4096] = b"\x01" * len(held[::4096])  # resident, not only reserved
    code = ("from cepplan.engine_adapter.runtime.memory import peak_resident; "
            "print(peak_resident())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 400 << 20  # cepplan's imports: tens of MB
    del held


def test_small_join_steps_read_the_process_memory_only_for_the_budget_check(monkeypatch):
    """A join step building fewer rows than the smallest piece is one piece whatever the
    memory: the process's resident memory is read once per step, by the budget check, not
    again to size its pieces (25,000 partitions of a keyed workload read it 50,000 times)."""
    wl = workload(TEMPLATES["seq_join_filter"])
    events = frame([("A", 0, 1, 0.5, "x"), ("B", 1, 2, 2.0, "x"), ("C", 2, 3, 3.5, "x"),
                    ("A", 3, 1, 0.5, "y"), ("B", 4, 2, 2.0, "y"), ("C", 5, 3, 5.0, "y")])
    job = job_from_json(job_data(wl, trivial_plan(wl)))
    monkeypatch.setenv(memory.MEMORY_VARIABLE, "1G")  # the budget itself reads nothing
    reads, checks = [], []
    real_resident, real_check = memory.resident, memory.check
    monkeypatch.setattr(memory, "resident", lambda: reads.append(1) or real_resident())
    monkeypatch.setattr(memory, "check", lambda *a, **k: checks.append(1) or real_check(*a, **k))
    run_local(events, job)
    assert checks and len(reads) == len(checks)
