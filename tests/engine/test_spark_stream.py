"""`cepplan run --follow DIR --engine spark` on a real local Structured Streaming query: the
fraud events (with an id column) arrive shuffled within `max_delay` in files dropped into the
followed directory one by one, with a malformed line and a few events far behind the others
(and a half-written file under a hidden name, never read); the spark-submit process group is
killed (SIGKILL) while a micro-batch is under way, the same command continues from the
checkpoint, and `_END` ends the stream (what arrived is matched to the end, exit 0). The
matches the sink committed (read from its log, as Spark's readers do) are the batch run's on
the events that were not late, as a multiset: none missing, none twice; the late events are
counted and written; the malformed line is counted. One streaming query per start (two JVMs
in all)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from itertools import pairwise
from pathlib import Path

from tests.in_process import cepplan
from tests.processes import children

ROOT = Path(__file__).resolve().parents[2]
FRAUD = ROOT / "examples" / "fraud"
BOUND = 240  # seconds a stream may take before the case fails (a hang, not slowness)
DELAY = 1.0  # options.max_delay, in the workload's minutes
FILES = 8
LATE_EVERY = 1500  # an event copied far behind the latest after every this many rows


def _cepplan(*args: object) -> None:
    done = cepplan(*args)
    assert done.returncode == 0, done.stderr


def _stream(tmp: Path) -> tuple[list[str], list[str], list[str]]:
    """(header + arrival-ordered rows, the rows that are not late, the late rows' lines):
    each row of the fraud events moved later by less than DELAY, plus copies far behind."""
    lines = (FRAUD / "events.csv").read_text().splitlines()
    header, rows = lines[0] + ",id", lines[1:]
    rng = random.Random(7)
    keyed = sorted((float(r.split(",")[1]) + rng.uniform(0, DELAY), f"{r},{i}")
                   for i, r in enumerate(rows))
    arrived, late, latest = [], [], 0.0
    for number, (_, row) in enumerate(keyed, 1):
        arrived.append(row)
        latest = max(latest, float(row.split(",")[1]))
        if number % LATE_EVERY == 0:  # ts three delays behind the latest: late
            fields = row.split(",")
            fields[1], fields[-1] = str(latest - 3 * DELAY), str(len(rows) + number)
            arrived.append(",".join(fields))
            late.append(arrived[-1])
    good = [row for row in arrived if row not in late]
    return [header, *arrived], good, late


def _committed(out: Path, output: str) -> list[str]:
    """The lines of `output` in the files the sink's log lists (a killed micro-batch's
    files are not in it)."""
    paths = set()
    for log in (out / "_spark_metadata").iterdir():
        if log.name[:1] != ".":
            for line in log.read_text().splitlines()[1:]:
                entry = json.loads(line)
                if entry["action"] == "add":
                    paths.add(entry["path"].removeprefix("file://"))
    return [line for path in sorted(paths) if f"/output={output}/" in path
            for line in Path(path).read_text().splitlines()]


def _spark_submit_of(pid: int) -> int:
    """The pid of the child cepplan started (spark-submit, leader of its process group)."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        started = children(pid)
        if started:
            return min(started)
        time.sleep(0.1)
    raise AssertionError("cepplan started no spark-submit")


def _wait_for(condition, what: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _count(folder: Path) -> int:
    return sum(1 for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else 0


def test_killed_and_restarted_stream_on_spark_matches_the_batch_run(tmp_path):
    raw = json.loads((FRAUD / "workload.json").read_text())
    raw["source"]["id_column"] = "id"
    raw.setdefault("options", {})["max_delay"] = DELAY
    workload, plan = tmp_path / "workload.json", tmp_path / "plan.json"
    workload.write_text(json.dumps(raw))
    _cepplan("optimize", workload, "-o", plan, "-q")
    lines, good, late = _stream(tmp_path)
    (tmp_path / "good.csv").write_text("\n".join([lines[0], *good]) + "\n")
    _cepplan("run", plan, tmp_path / "good.csv", "-o", tmp_path / "batch", "-q")
    rows = lines[1:]
    cuts = [round(len(rows) * i / FILES) for i in range(FILES + 1)]
    files = ["\n".join([lines[0], *rows[a:b]]) + "\n" for a, b in pairwise(cuts)]
    files[2] = files[2].replace("\n", "\nWithdrawal,not-a-time,k1,,,5.0,,99999999\n", 1)

    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    source.mkdir()
    (source / ".half-written.csv").write_text(lines[0] + "\nLogin,1.0,k0")  # never read

    def drop(number: int) -> None:
        hidden = source / f".part-{number:02d}.csv"
        hidden.write_text(files[number])
        hidden.rename(source / f"part-{number:02d}.csv")

    command = [sys.executable, "-m", "cepplan", "run", plan, "--follow", source, "-o", out,
               "--checkpoint", checkpoint, "--engine", "spark", "--master", "local[2]",
               "--trigger", "0.5", "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    offsets, commits = checkpoint / "spark" / "offsets", checkpoint / "spark" / "commits"
    follow = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    try:
        for number in range(3):
            drop(number)
        _wait_for(lambda: _count(commits) >= 1, "no micro-batch committed", follow)
        drop(3)
        drop(4)  # then killed once a micro-batch is planned, before (or as) it commits
        _wait_for(lambda: _count(offsets) > _count(commits) or _count(commits) >= 3,
                  "no micro-batch planned", follow)
        os.killpg(_spark_submit_of(follow.pid), signal.SIGKILL)
        assert follow.wait(timeout=BOUND) != 0
    finally:
        follow.kill()
        follow.wait()
    for number in range(5, FILES):
        drop(number)
    (source / "_END").touch()
    done = subprocess.run(command, env=env, capture_output=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr.decode()

    batch = (tmp_path / "batch" / "matches" / "part-00000.jsonl").read_text().splitlines()
    streamed = _committed(out, "matches")
    assert Counter(streamed) == Counter(batch) and len(batch) > 100
    assert sorted(json.loads(e)["id"] for e in _committed(out, "late-events")) == sorted(
        int(row.rsplit(",", 1)[1]) for row in late)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["engine"] == "spark" and not metrics["stream"]["stopped_by_signal"]
    assert metrics["rows_read"] == len(rows) + 1  # the malformed line too
    assert sum(metrics["rows_rejected"].values()) == 1
    assert metrics["stream"]["late_events"] == Counter(row.split(",")[0] for row in late)
    latency = metrics["stream"]["detection_latency_seconds"]
    per_pattern = Counter(json.loads(line)["pattern"] for line in batch)
    assert {name: f["matches"] for name, f in latency.items()} == per_pattern
    assert all(0 <= f["p50"] <= f["p99"] <= f["max"] for f in latency.values())
