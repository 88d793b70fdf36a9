"""Memory outside the time limits: matching stops with one clear error naming the pattern, its
window and the figures before it passes its memory budget (`CEPPLAN_MATCH_MEMORY`), never an
out-of-memory kill — for one key with thousands of events in a window, a Kleene cap that
enumerates millions of subsets, and a hierarchy of 50 nested patterns. Each run is a child
process whose address space is capped well above the budget (the machine is never at risk)
and which reports its own peak resident memory."""

from __future__ import annotations

import json
import os
import random
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from cepplan.engine_adapter.runtime import kleene, kleene_stage, memory
from tests.engine.test_matcher_vs_reference import (
    test_denser_streams as denser_streams_match_the_reference,
)
from tests.hostile.test_solver_limits import PEAK

ADDRESS_SPACE = 6 << 30  # the child's cap: a run past its budget fails, never the machine
BUDGET = "700M"


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def cepplan(*args: object, budget: str = BUDGET) -> subprocess.CompletedProcess:
    """`cepplan ARGS` in a capped child with the matcher's memory budget set."""
    env = {**os.environ, memory.MEMORY_VARIABLE: budget}
    return subprocess.run([sys.executable, "-c", PEAK, *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env, preexec_fn=_capped)


def peak_mb(stderr: str) -> float:
    return int(re.search(r"peak-rss-kb (\d+)", stderr).group(1)) / 1024


def one_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    return errors[0]


def planned(tmp_path: Path, raw: dict, rows: list[tuple[str, float, str, float]]) -> tuple:
    """The workload planned by `cepplan optimize`, and the rows as an events CSV."""
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(raw))
    events = tmp_path / "events.csv"
    events.write_text("type,ts,k,v\n" + "".join(f"{t},{ts},{k},{v}\n" for t, ts, k, v in rows))
    plan = tmp_path / "plan.json"
    done = cepplan("optimize", workload, "-o", plan, "-q")
    assert done.returncode == 0, done.stderr
    return plan, events


def _workload(patterns: list[dict], cap: int = 16) -> dict:
    return {"format": "cepplan.workload/1", "time_unit": "s", "options": {"kleene_cap": cap},
            "source": {"format": "csv", "header": True, "type_column": "type",
                       "time_column": "ts", "key_columns": ["k"]},
            "event_types": {t: {"attributes": {"k": "string", "v": "double"}} for t in "AB"},
            "patterns": patterns, "statistics": {"rates": {"A": 1.0, "B": 1.0}}}


def test_one_key_with_thousands_of_events_in_a_window(tmp_path):
    """3,000 A then 3,000 B of one key in an hour's window: 9 million pairs (grew past
    3.8 GB with no warning; then refused at the budget). Now matched in pieces and written
    as found: every pair, under the budget."""
    raw = _workload([{"name": "pairs", "structure": ["SEQ", "a:A", "b:B"],
                      "partition_by": ["k"], "within": "1h"}])
    rows = [("A", i / 10, "key1", 0.5) for i in range(3000)]
    rows += [("B", 300 + i / 10, "key1", 0.5) for i in range(3000)]
    plan, events = planned(tmp_path, raw, rows)
    result = cepplan("run", plan, events, "-o", tmp_path / "out", "-q")
    assert result.returncode == 0, result.stderr[-3000:]
    assert peak_mb(result.stderr) < 700
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["matches"]["pairs"] == 3000 * 3000 and metrics["chunk_splits"]["pairs"] > 0
    with open(tmp_path / "out" / "matches" / "part-00000.jsonl", "rb") as lines:
        assert sum(block.count(b"\n") for block in iter(lambda: lines.read(1 << 24), b"")) \
            == 3000 * 3000


def test_a_kleene_cap_of_24_is_refused_before_enumerating(tmp_path):
    """kleene_cap 24 over 24 events of one key: 16.7 million subsets (2^24 enumerated into
    1.2 GB and more). Enumerated in batches of rows, refused at the first row whose own
    subsets (2^19 and more) pass the budget, from the candidate counts, before it is built."""
    raw = _workload([{"name": "runs", "structure": ["SEQ", ["KLEENE", "b:B"]],
                      "partition_by": ["k"], "within": "1h"}], cap=24)
    plan, events = planned(tmp_path, raw, [("B", float(i), "key1", i) for i in range(24)])
    result = cepplan("run", plan, events, "-o", tmp_path / "out", "-q")
    line = one_error(result, "pattern runs", "Kleene matches", "options.kleene_cap=24")
    assert int(re.search(r"build about ([\d,]+)", line)[1].replace(",", "")) >= 1 << 19
    assert peak_mb(result.stderr) < 700  # the rows before it matched within the budget


def test_a_count_window_is_named_in_events(tmp_path):
    """The same Kleene cap under a count window: the error gives the window in events."""
    raw = _workload([{"name": "runs", "structure": ["SEQ", ["KLEENE", "b:B"]],
                      "partition_by": ["k"], "within": "30 events"}], cap=24)
    plan, events = planned(tmp_path, raw, [("B", float(i), "key1", i) for i in range(24)])
    result = cepplan("run", plan, events, "-o", tmp_path / "out", "-q")
    one_error(result, "pattern runs", "within its window of 30 events", "Kleene matches")


def nested_workload(levels: int) -> dict:
    """A hierarchy: p0 = SEQ(a:A, b:B), each next pattern SEQ(x:previous, b:B)."""
    patterns = [{"name": "p0", "structure": ["SEQ", "a:A", "b:B"], "partition_by": ["k"],
                 "within": "1min", "emit": {"k": "b.k"}}]
    for level in range(1, levels):
        patterns.append({"name": f"p{level}", "structure": ["SEQ", f"x:p{level - 1}", "b:B"],
                         "partition_by": ["k"], "within": "1min", "emit": {"k": "b.k"}})
    return _workload(patterns)


def nested_events(count: int, seed: int = 0) -> list[tuple[str, float, str, float]]:
    rng = random.Random(seed)
    stamp, rows = 0.0, []
    for _ in range(count):
        stamp += rng.expovariate(0.2)
        rows.append((rng.choice("AB"), round(stamp, 2), f"key{rng.randrange(3)}", 0.5))
    return rows


@pytest.mark.case_seconds(180)  # two children: optimize and run, slow on a loaded machine
def test_fifty_nested_patterns_stop_at_the_budget(tmp_path):
    """50 nested patterns over 300 events (reached 22 GB): planning is small; matching
    grows level by level (each level's matches carry the levels below) and stops with one
    error at the budget, the levels below it written no further."""
    plan, events = planned(tmp_path, nested_workload(50), nested_events(300))
    result = cepplan("run", plan, events, "-o", tmp_path / "out", "-q")
    one_error(result, "pattern p", "window of 60 time units", "memory budget of 700.0 MiB")
    assert peak_mb(result.stderr) < 700


def test_the_budget_is_read_and_a_bad_one_refused(monkeypatch):
    monkeypatch.setenv(memory.MEMORY_VARIABLE, "1.5G")
    assert memory.budget() == int(1.5 * (1 << 30))
    monkeypatch.setenv(memory.MEMORY_VARIABLE, "lots")
    with pytest.raises(memory.MatchMemoryError, match="CEPPLAN_MATCH_MEMORY='lots'"):
        memory.budget()
    monkeypatch.delenv(memory.MEMORY_VARIABLE)
    assert memory.resident() < memory.budget()


@pytest.mark.parametrize("template", ["kleene_vshape", "kleene_and_last", "not_kleene"])
@pytest.mark.parametrize("seed", [1, 2])
def test_kleene_in_blocks_finds_the_reference_matches(monkeypatch, template, seed):
    """Subsets enumerated a few numbers at a time (`kleene.BLOCK`), without kept getters
    past 2 candidates: the denser streams' matches equal the brute-force reference's."""
    monkeypatch.setattr(kleene, "BLOCK", 4)
    monkeypatch.setattr(kleene_stage, "CACHED_GETTERS", 2)
    denser_streams_match_the_reference(template, seed)


def test_a_budget_the_events_alone_pass_says_so(tmp_path):
    """A budget under what the process holds before a step builds anything: the error says
    the memory in use passes it (it said the step "would build about 0 partial matches",
    "about 0 bytes on top")."""
    raw = _workload([{"name": "pairs", "structure": ["SEQ", "a:A", "b:B"],
                      "partition_by": ["k"], "within": "1h"}])
    plan, events = planned(tmp_path, raw, [("A", 1.0, "key1", 0.5), ("B", 2.0, "key1", 0.5)])
    result = cepplan("run", plan, events, "-o", tmp_path / "out", "-q", budget="20M")
    line = one_error(result, "pattern pairs", "within its window of 3600", "already in use",
                     "memory budget of 20.0 MiB", "CEPPLAN_MATCH_MEMORY")
    assert "about 0" not in line
    assert not (tmp_path / "out").exists()
