"""`cepplan run --follow DIR --engine spark` on a real local Structured Streaming query: the
fraud events (with an id column; every pattern keyed by user) arrive shuffled within
`max_delay` in files dropped into the followed directory a few at a time, with a malformed
line and a few events far behind the others (and a half-written file under a hidden name,
never read); the spark-submit process group is killed (SIGKILL) KILLS times (5 in
`python -m benchmarks streaming_spark`), each at a random moment once the query has planned a
micro-batch, the same command continuing from the
checkpoint each time, and `_END` ends the stream (what arrived is matched to the end, exit 0;
that last start on a terminal shows the progress line, its last figures the whole stream's).
The matches the sink committed (read from its log, as Spark's readers do) are the batch run's
on the events that were not late, as a multiset: none missing, none twice; the late events
are counted and written; the malformed line is counted. The stream runs in two key groups
(local[2]): each user's matches come from one group's task, and both groups match. One
streaming query per start (KILLS + 1 JVMs in all)."""

from __future__ import annotations

import json
import os
import pty
import random
import re
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from tests.in_process import cepplan
from tests.processes import children

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

ROOT = Path(__file__).resolve().parents[2]
FRAUD = ROOT / "examples" / "fraud"
BOUND = 240  # seconds a stream may take before the case fails (a hang, not slowness)
DELAY = 1.0  # options.max_delay, in the workload's minutes
FILES = 12
KILLS = 2  # each costs a JVM start: the suite's share; the benchmark kills 5 times
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


def _committed(out: Path, output: str, *, with_paths: bool = False) -> list:
    """The lines of `output` in the files the sink's log lists (a killed micro-batch's
    files are not in it); `with_paths`: (file, line) pairs."""
    paths = set()
    for log in (out / "_spark_metadata").iterdir():
        if log.name[:1] != ".":
            for line in log.read_text().splitlines()[1:]:
                entry = json.loads(line)
                if entry["action"] == "add":
                    paths.add(entry["path"].removeprefix("file://"))
    return [(path, line) if with_paths else line for path in sorted(paths)
            if f"/output={output}/" in path for line in Path(path).read_text().splitlines()]


def _on_a_terminal(command: list, env: dict[str, str]) -> str:
    """Run `command` to its end with its standard error on a terminal (a pseudo-terminal):
    what it wrote there."""
    terminal, child_side = pty.openpty()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=child_side)
    os.close(child_side)
    shown, deadline = bytearray(), time.monotonic() + BOUND
    while time.monotonic() < deadline:
        if not select.select([terminal], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # the child's side closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    assert process.wait(timeout=BOUND) == 0, shown.decode(errors="replace")
    return shown.decode(errors="replace")


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
    killed_and_restarted_stream(tmp_path, KILLS, seed=11)


def killed_and_restarted_stream(tmp_path: Path, kills: int, seed: int) -> None:
    """The stream of the module's docstring killed `kills` times (at moments drawn with
    `seed`); an AssertionError says what differs from the batch run."""
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
    offsets = checkpoint / "spark" / "offsets"
    rng, dropped = random.Random(seed), 0
    for _ in range(kills):  # the directory grows while the stream runs, and while it is down
        follow = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
        try:
            planned = _count(offsets)
            for _ in range(2):
                drop(dropped)
                dropped += 1
            _wait_for(lambda planned=planned: _count(offsets) > planned,
                      "no micro-batch planned", follow)
            time.sleep(rng.uniform(0, 1.5))  # before, during or after its commit
            os.killpg(_spark_submit_of(follow.pid), signal.SIGKILL)
            assert follow.wait(timeout=BOUND) != 0
        finally:
            follow.kill()
            follow.wait()
    for number in range(dropped, FILES):
        drop(number)
    (source / "_END").touch()
    shown = _on_a_terminal([c for c in command if c != "-q"], env)  # its progress line

    batch = (tmp_path / "batch" / "matches" / "part-00000.jsonl").read_text().splitlines()
    streamed = _committed(out, "matches")
    assert Counter(streamed) == Counter(batch) and len(batch) > 100
    assert json.loads((checkpoint / "key-groups.json").read_text()) == {"key_groups": 2}
    tasks: dict[str, set[str]] = {}  # user: the tasks (part file numbers) its matches are in
    for path, line in _committed(out, "matches", with_paths=True):
        user = {e["user"] for e in json.loads(line)["events"].values()}.pop()
        tasks.setdefault(user, set()).add(Path(path).name.split("-")[1])
    assert all(len(found) == 1 for found in tasks.values())
    assert {t for found in tasks.values() for t in found} == {"00000", "00001"}
    assert sorted(json.loads(e)["id"] for e in _committed(out, "late-events")) == sorted(
        int(row.rsplit(",", 1)[1]) for row in late)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["engine"] == "spark" and not metrics["stream"]["stopped_by_signal"]
    assert metrics["rows_read"] == len(rows) + 1  # the malformed line too
    assert sum(metrics["rows_rejected"].values()) == 1
    assert metrics["stream"]["late_events"] == Counter(row.split(",")[0] for row in late)
    last = [part for part in shown.split("\r") if "events/s" in part][-1]
    assert f"matches {len(batch):,}  late {len(late):,}  state " in last, shown
    assert re.search(r"latency p50/p99 \d+\.\d\d/\d+\.\d\ds", last), last
    latency = metrics["stream"]["detection_latency_seconds"]
    per_pattern = Counter(json.loads(line)["pattern"] for line in batch)
    assert {name: f["matches"] for name, f in latency.items()} == per_pattern
    assert all(0 <= f["p50"] <= f["p99"] <= f["max"] for f in latency.values())
