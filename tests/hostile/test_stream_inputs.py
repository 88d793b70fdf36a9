"""`cepplan run --follow` and `cepplan replay` on bad input and in real runs: a missing or
wrong source, a bad `max_delay`, an output that is not new, a plan a stream cannot run — one
error line each; a malformed line mid-stream is counted and the stream goes on; files dropped
into a followed directory (one half-written under a hidden name first) are read once
complete; SIGTERM drains and exits 0 with whole outputs. Matches are compared with the batch
run of the same events (no wall-clock assertion: only generous bounds against hangs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from cepplan.engine_adapter.local.checkpoint import recorded_files
from tests.hostile import test_output_storage as storage
from tests.hostile.conftest import EXAMPLES, ROOT
from tests.in_process import cepplan

tmpfs = storage.tmpfs  # the fixture: a real tmpfs of a given size
BOUND = 90  # seconds a subprocess may take before the case fails (a hang, not slowness)


@pytest.fixture(scope="module")
def fraud_plan(tmp_path_factory) -> tuple[Path, Path]:
    """The fraud example's plan and its batch run's matches (sorted lines)."""
    folder = tmp_path_factory.mktemp("fraud")
    plan = folder / "plan.json"
    _made("optimize", EXAMPLES / "fraud" / "workload.json", "-o", plan, "-q")
    _made("run", plan, EXAMPLES / "fraud" / "events.csv", "-o", folder / "batch", "-q")
    return plan, folder / "batch"


@pytest.fixture(scope="module")
def batch_parquet(fraud_plan) -> Path:
    """The batch run's matches of the fraud example as Parquet (`--format parquet`)."""
    out = fraud_plan[1].parent / "batch-parquet"
    _made("run", fraud_plan[0], EXAMPLES / "fraud" / "events.csv", "-o", out, "-q",
          "--format", "parquet")
    return out


def _parquet_rows(out: Path) -> dict[str, Counter]:
    """Per pattern directory of `out/matches`, its rows (every part, read with pyarrow) as a
    multiset of JSON texts, and its schema."""
    import pyarrow.parquet as pq

    rows = {}
    for folder in sorted((out / "matches").iterdir()):
        table = pq.read_table(folder)
        rows[folder.name] = (Counter(json.dumps(r, sort_keys=True) for r in table.to_pylist()),
                             table.schema.remove_metadata())
    return rows


def _cepplan(*args: object, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "cepplan", *map(str, args)], env=env,
                          capture_output=True, timeout=BOUND, **kwargs)
    assert done.returncode == 0, done.stderr.decode()
    return done


def _made(*args: object) -> None:
    """A test's input or reference, made by `cepplan ARGS...` in this process (the process
    is not what is tested)."""
    done = cepplan(*args)
    assert done.returncode == 0, done.stderr


def _matches(out: Path) -> list[str]:
    return sorted((out / "matches" / "part-00000.jsonl").read_text().splitlines())


def _lines() -> list[str]:
    return (EXAMPLES / "fraud" / "events.csv").read_text().splitlines(keepends=True)


def test_missing_source_directory(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], "--follow", tmp_path / "nowhere", "-o", tmp_path / "out",
        "-q").one_error("nowhere", "no such directory to follow")


def test_source_is_a_file(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], "--follow", EXAMPLES / "fraud" / "events.csv", "-o",
        tmp_path / "out", "-q").one_error("events.csv", "not a directory")


def test_output_not_empty(cli, fraud_plan, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan[0], "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "-q").one_error("out", "not empty")
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_events_and_follow_together(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], EXAMPLES / "fraud" / "events.csv", "--follow", tmp_path,
        "-o", tmp_path / "out", "-q").one_error("not both")


@pytest.mark.parametrize(("value", "fragment"), [
    (-1, "positive"), ("-2min", "cannot read duration"), (2000, "more than a day"),
    (True, "expected a number")])
def test_bad_max_delay(cli, fraud, tmp_path, value, fragment):
    """A negative delay, or a bare number over a day in the time unit (minutes here)."""
    raw = json.loads((fraud / "workload.json").read_text())
    raw.setdefault("options", {})["max_delay"] = value
    (fraud / "workload.json").write_text(json.dumps(raw))
    cli("validate", fraud / "workload.json").one_error("max_delay", fragment)


def test_long_max_delay_with_its_unit(cli, fraud):
    """Over a day is accepted when written with its unit."""
    raw = json.loads((fraud / "workload.json").read_text())
    raw.setdefault("options", {})["max_delay"] = "36h"
    (fraud / "workload.json").write_text(json.dumps(raw))
    assert cli("validate", fraud / "workload.json").code == 0


def test_plan_a_stream_cannot_run(cli, tmp_path):
    """A pattern reading another's matches (network's hierarchy) is refused."""
    plan = tmp_path / "plan.json"
    assert cli("optimize", EXAMPLES / "network" / "workload.json", "-o", plan, "-q").code == 0
    (tmp_path / "in").mkdir()
    cli("run", plan, "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "-q").one_error("plan.json", "--follow runs plans")


def test_malformed_lines_mid_stream_are_counted(fraud_plan, tmp_path):
    """Standard input with two malformed lines in the middle: counted by reason, the other
    rows give the batch run's matches on the same lines."""
    lines = _lines()
    broken = ["Login,not-a-time,k1,s0,s0,,\n", "Login,1.5,k0,s0,s0,,,extra\n"]
    bad = lines[:3000] + broken + lines[3000:]
    data = "".join(bad)
    (tmp_path / "events.csv").write_text(data)
    _made("run", fraud_plan[0], tmp_path / "events.csv", "-o", tmp_path / "batch", "-q")
    _cepplan("run", fraud_plan[0], "--follow", "-", "-o", tmp_path / "out", "-q",
             "--trigger", "0.05", input=data.encode())
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert sum(metrics["rows_rejected"].values()) == 2, metrics["rows_rejected"]
    assert metrics["rows_read"] == len(bad) - 1
    assert _matches(tmp_path / "out") == _matches(tmp_path / "batch")


def test_files_dropped_into_a_followed_directory(fraud_plan, tmp_path):
    """`cepplan replay --to DIR` drops files into the directory while `run --follow` reads
    it; a half-written hidden file is ignored. Same matches as the batch run."""
    source = tmp_path / "in"
    source.mkdir()
    (source / ".half-written.csv.tmp").write_text(_lines()[0] + "Login,1.0,k0")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    follow = subprocess.Popen([sys.executable, "-m", "cepplan", "run", fraud_plan[0],
                               "--follow", source, "-o", tmp_path / "out", "-q",
                               "--trigger", "0.05"], env=env, stderr=subprocess.PIPE)
    try:
        _cepplan("replay", EXAMPLES / "fraud" / "events.csv", "-w",
                 EXAMPLES / "fraud" / "workload.json", "--to", source, "--rate", "40000",
                 "-q")
        assert follow.wait(timeout=BOUND) == 0, follow.stderr.read().decode()
    finally:
        follow.kill()
    assert len([p for p in source.iterdir() if p.name.startswith("part-")]) > 1
    assert _matches(tmp_path / "out") == _matches(fraud_plan[1])
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["rows_read"] == len(_lines()) - 1
    latency = metrics["stream"]["detection_latency_seconds"]
    assert latency and all(0 <= v["p50"] <= v["p99"] <= v["max"] for v in latency.values())


def test_sigterm_drains_and_exits_cleanly(fraud_plan, tmp_path):
    """SIGTERM while following: the events received are matched to the end (the final
    flush), metrics.json written, exit 0."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "events.csv").write_text("".join(_lines()))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    follow = subprocess.Popen([sys.executable, "-m", "cepplan", "run", fraud_plan[0],
                               "--follow", source, "-o", out, "-q", "--trigger", "0.05"],
                              env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + BOUND  # matches appear once the file has been read
        part = out / "matches" / "part-00000.jsonl"
        while not (part.exists() and part.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.05)
        follow.send_signal(signal.SIGTERM)
        assert follow.wait(timeout=BOUND) == 0, follow.stderr.read().decode()
    finally:
        follow.kill()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["stream"]["stopped_by_signal"]
    assert _matches(out) == _matches(fraud_plan[1])


def test_replay_rate_and_speed_together(cli, tmp_path):
    cli("replay", EXAMPLES / "fraud" / "events.csv", "-w", EXAMPLES / "fraud" / "workload.json",
        "--to", tmp_path / "in", "--rate", "10", "--speed", "2").one_error("--rate", "not both")


@pytest.mark.parametrize(("shuffle", "late"), [("30s", False), ("90s", True)])
def test_replayed_shuffle_within_the_delay_is_never_late(fraud, tmp_path, shuffle, late):
    """Replayed shuffled within max_delay (30 s): no event late, as many matches as the batch
    run; shuffled within three times that: late events counted, each written aside."""
    raw = json.loads((fraud / "workload.json").read_text())
    raw.setdefault("options", {})["max_delay"] = "30s"
    (fraud / "workload.json").write_text(json.dumps(raw))
    plan = tmp_path / "plan.json"
    _made("optimize", fraud / "workload.json", "-o", plan, "-q")
    _made("run", plan, fraud / "events.csv", "-o", tmp_path / "batch", "-q")
    replayed = _cepplan("replay", fraud / "events.csv", "-w", fraud / "workload.json",
                        "--to", "-", "--shuffle-within", shuffle, "--seed", "3", "-q").stdout
    assert replayed != (fraud / "events.csv").read_bytes()  # the order did change
    _cepplan("run", plan, "--follow", "-", "-o", tmp_path / "out", "-q", input=replayed)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    counted = sum(metrics["stream"]["late_events"].values())
    written = (tmp_path / "out" / "late-events.jsonl").read_text().splitlines()
    assert counted == len(written)
    assert (counted > 0) == late
    if not late:
        batch = json.loads((tmp_path / "batch" / "metrics.json").read_text())
        assert metrics["matches"] == batch["matches"]


def test_a_tcp_stream_on_loopback(fraud_plan, tmp_path):
    """`replay --to tcp://` serves the events to `run --follow tcp://` (a real socket on
    loopback): the batch run's matches; the stream ends when the server closes."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as probe:  # a free port
        port = probe.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    feed = subprocess.Popen([sys.executable, "-m", "cepplan", "replay",
                             EXAMPLES / "fraud" / "events.csv", "-w",
                             EXAMPLES / "fraud" / "workload.json", "--to", url, "-q"], env=env)
    try:
        _cepplan("run", fraud_plan[0], "--follow", url, "-o", tmp_path / "out", "-q")
        assert feed.wait(timeout=BOUND) == 0
    finally:
        feed.kill()
    assert _matches(tmp_path / "out") == _matches(fraud_plan[1])


def test_bad_tcp_address(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], "--follow", "tcp://nohost", "-o", tmp_path / "out",
        "-q").one_error("tcp://nohost", "tcp://HOST:PORT")


def _drop(source: Path, name: str, text: str) -> None:
    """A complete file appears in the followed directory (written hidden, then renamed)."""
    (source / f".{name}").write_text(text)
    (source / f".{name}").rename(source / name)


@pytest.mark.parametrize("matches", ["jsonl", "parquet"])
def test_kill_9_at_random_points_and_restart_from_the_checkpoint(fraud_plan, batch_parquet,
                                                                tmp_path, matches):
    """The fraud events in 30 files dropped into a followed directory; the run is killed
    (SIGKILL) at 5 seeded random points — after a random number of files, once the checkpoint
    records all of them or all but the last, so a kill may land in the middle of a micro-batch
    — and restarted with the same arguments each time. The final matches are the batch run's
    as a multiset (none missing, none twice), every row is read once and every match has
    its detection latency counted once. As Parquet: the rows of the visible parts (each
    readable whole after every kill) are the batch run's `--format parquet` rows."""
    import random
    header, rows = _lines()[0], _lines()[1:]
    cuts = [round(len(rows) * i / 30) for i in range(31)]
    files = [(f"part-{i:03d}.csv", header + "".join(rows[a:b]))
             for i, (a, b) in enumerate(pairwise(cuts))]
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    source.mkdir()
    args = [sys.executable, "-m", "cepplan", "run", fraud_plan[0], "--follow", source,
            "-o", out, "--checkpoint", checkpoint, "-q", "--trigger", "0.02",
            "--format", matches]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(24)
    dropped = 0
    for kill_after in sorted(rng.sample(range(1, len(files)), 5)):
        follow = subprocess.Popen(args, env=env, stderr=subprocess.PIPE)
        try:
            while dropped < kill_after:
                _drop(source, *files[dropped])
                dropped += 1
            wanted = kill_after - rng.randint(0, 1)
            deadline = time.monotonic() + BOUND
            while len(recorded_files(checkpoint)) < wanted and follow.poll() is None:
                assert time.monotonic() < deadline, "the stream did not read its files"
                time.sleep(0.01)
            assert follow.poll() is None, follow.stderr.read().decode()
        finally:
            follow.kill()
            follow.wait()
        if matches == "parquet":
            _parquet_rows(out)  # every visible part reads whole
    for name, text in files[dropped:]:
        _drop(source, name, text)
    (source / "_END").touch()
    done = subprocess.run(args, env=env, capture_output=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr.decode()
    batch = (fraud_plan[1] / "matches" / "part-00000.jsonl").read_text().splitlines()
    if matches == "parquet":
        assert _parquet_rows(out) == _parquet_rows(batch_parquet)
    else:
        streamed = (out / "matches" / "part-00000.jsonl").read_text().splitlines()
        assert Counter(streamed) == Counter(batch)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["rows_read"] == len(rows)
    per_pattern = Counter(json.loads(line)["pattern"] for line in batch)
    latency = metrics["stream"]["detection_latency_seconds"]
    assert {name: f["matches"] for name, f in latency.items()} == per_pattern


def test_parquet_parts_per_micro_batch(fraud_plan, batch_parquet, tmp_path):
    """`--format parquet`: files dropped into the followed directory one by one give a part
    per micro-batch with matches; the rows of all parts, read with pyarrow, are the batch
    run's `--format parquet` rows as a multiset, in the same typed columns."""
    header, rows = _lines()[0], _lines()[1:]
    cuts = [round(len(rows) * i / 6) for i in range(7)]
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    follow = subprocess.Popen([sys.executable, "-m", "cepplan", "run", fraud_plan[0],
                               "--follow", source, "-o", out, "-q", "--trigger", "0.02",
                               "--format", "parquet"], env=env, stderr=subprocess.PIPE)
    try:
        for i, (a, b) in enumerate(pairwise(cuts)):
            _drop(source, f"part-{i}.csv", header + "".join(rows[a:b]))
            deadline = time.monotonic() + BOUND
            while not (out / "matches").is_dir() or len(list(
                    (out / "matches").glob("*/part-*.parquet"))) <= i:
                assert time.monotonic() < deadline and follow.poll() is None
                time.sleep(0.02)
        (source / "_END").touch()
        assert follow.wait(timeout=BOUND) == 0, follow.stderr.read().decode()
    finally:
        follow.kill()
    assert _parquet_rows(out) == _parquet_rows(batch_parquet)
    assert max(len(list(f.glob("part-*.parquet"))) for f in (out / "matches").iterdir()) > 2
    assert not list(out.glob("matches/*/.*"))  # no hidden part left


def test_parquet_parts_from_standard_input(fraud_plan, batch_parquet, tmp_path):
    """Lines on standard input, `--format parquet`: the batch run's Parquet rows."""
    _cepplan("run", fraud_plan[0], "--follow", "-", "-o", tmp_path / "out", "-q",
             "--trigger", "0.05", "--format", "parquet", input="".join(_lines()).encode())
    assert _parquet_rows(tmp_path / "out") == _parquet_rows(batch_parquet)


@pytest.mark.parametrize("matches", ["jsonl", "parquet"])
def test_a_full_disk_mid_stream(cli, fraud_plan, tmp_path, tmpfs, matches):
    """The output's file system fills up while matches are written: one error line naming
    the output and the problem, not a traceback; every visible Parquet part reads whole."""
    point = tmpfs("16k")
    source = tmp_path / "in"
    source.mkdir()
    (source / "events.csv").write_text("".join(_lines()))
    (source / "_END").touch()
    cli("run", fraud_plan[0], "--follow", source, "-o", point / "out", "-q", "--format",
        matches).one_error("out: cannot write: no space left on device")
    if matches == "parquet":
        _parquet_rows(point / "out")


def test_parquet_parts_removed_since_the_checkpoint(cli, fraud_plan, tmp_path):
    """A Parquet part the checkpoint records, deleted from the output: the restart says so;
    a checkpoint of JSON lines does not continue as Parquet."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "events.csv").write_text("".join(_lines()))
    (source / "_END").touch()
    follow = ("--follow", source, "-o", tmp_path / "out", "--checkpoint", tmp_path / "ck", "-q")
    assert cli("run", fraud_plan[0], *follow, "--format", "parquet").code == 0
    cli("run", fraud_plan[0], *follow).one_error("checkpoint.arrow", "another --format")
    for part in (tmp_path / "out" / "matches").glob("*/part-00000.parquet"):
        part.unlink()
    cli("run", fraud_plan[0], *follow, "--format", "parquet").one_error("matches",
                                                                        "Parquet parts")


def test_parquet_stream_on_spark(cli, fraud_plan, tmp_path):
    """A Structured Streaming job writes JSON lines: Parquet is refused before any JVM."""
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan[0], "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "--engine", "spark", "--format", "parquet", "-q").one_error("--format", "on Spark")


CLOCK_WORKLOAD = {
    "format": "cepplan.workload/1", "name": "clock", "time_unit": "s",
    "source": {"format": "csv", "header": True, "type_column": "kind", "time_column": "at",
               "time_format": "yyyy-MM-dd HH:mm:ss"},
    "event_types": {"A": {"attributes": {"v": "long"}}, "B": {"attributes": {"v": "long"}}},
    "patterns": [{"name": "unanswered", "structure": ["SEQ", "a:A", ["NOT", "n:B"]],
                  "within": 6}],
    "statistics": {"rates": {"A": 0.5, "B": 0.5}}}


def test_times_on_a_terminal_as_the_input_writes_them(tmp_path):
    """Events whose times are text (`time_format`) on standard input, stderr a terminal:
    the progress line's watermark and the end-of-input warning (the last A's NOT window
    reaches past the input) are written as the input writes times, not as numbers."""
    from datetime import UTC, datetime

    from tests.hostile.test_adaptive_inputs import _terminal  # (it imports this module)

    (tmp_path / "w.json").write_text(json.dumps(CLOCK_WORKLOAD))
    start = datetime(2024, 2, 28, 23, 59, 0, tzinfo=UTC).timestamp()
    texts = [datetime.fromtimestamp(start + 2 * i, UTC).strftime("%Y-%m-%d %H:%M:%S")
             for i in range(40)]
    events = "kind,at,v\n" + "".join(f"{'AB'[i % 3 == 1]},{t},{i}\n"
                                       for i, t in enumerate(texts))
    _made("optimize", tmp_path / "w.json", "-o", tmp_path / "plan.json", "-q")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    terminal, shown = _terminal()
    try:
        done = subprocess.run([sys.executable, "-m", "cepplan", "run", tmp_path / "plan.json",
                               "--follow", "-", "-o", tmp_path / "out", "--trigger", "0.05"],
                              input=events.encode(), stdout=subprocess.PIPE, stderr=terminal,
                              env=env, timeout=BOUND)
    finally:
        os.close(terminal)
    text = shown()
    assert done.returncode == 0, text
    assert f"watermark {texts[-1]} " in text, text[-500:]
    assert f"beyond the events given ({texts[0]} to {texts[-1]})" in text.replace("\r\n", " ")


def test_a_replan_line_writes_its_watermark_as_the_input_writes_times():
    """An adaptive stream's end-of-run line says when it re-planned in the input's time."""
    from cepplan.cli.follow_run import switch_lines
    from cepplan.sources.time_text import time_writer

    record = {"micro_batch": 7, "watermark": 1709164818.0, "replan_seconds": 0.5,
              "reason": ["rate of A rose"], "changes": [], "modelled_gain": 1.5,
              "throughput_before": None, "throughput_after": None}
    lines = switch_lines({"adaptive": True, "replans": [record]},
                         time_writer("yyyy-MM-dd HH:mm:ss", "s"))
    assert "(watermark 2024-02-29 00:00:18)" in lines[0], lines


def test_checkpoint_of_another_plan(cli, fraud_plan, tmp_path):
    """A checkpoint written for one plan, given to a run of another: one error line."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "_END").touch()
    follow = ("--follow", source, "-o", tmp_path / "out", "--checkpoint", tmp_path / "ck", "-q")
    assert cli("run", fraud_plan[0], *follow).code == 0
    cli("run", fraud_plan[0], *follow, "--plan-kind", "trivial").one_error(
        "checkpoint.arrow", "another plan or workload")


def test_checkpoint_of_a_stream_of_lines(cli, fraud_plan, tmp_path):
    """Standard input cannot be read again after a kill: --checkpoint is refused there."""
    cli("run", fraud_plan[0], "--follow", "-", "-o", tmp_path / "out", "--checkpoint",
        tmp_path / "ck", "-q").one_error("--checkpoint", "directory stream only")


def test_checkpoint_without_follow(cli, fraud_plan, tmp_path):
    cli("run", fraud_plan[0], EXAMPLES / "fraud" / "events.csv", "-o", tmp_path / "out",
        "--checkpoint", tmp_path / "ck", "-q").one_error("--checkpoint", "--follow")


def test_output_shorter_than_its_checkpoint(cli, fraud_plan, tmp_path):
    """Matches removed from the output after a checkpoint: the restart says so, it does not
    write a stream with a hole."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "events.csv").write_text("".join(_lines()))
    (source / "_END").touch()
    follow = ("--follow", source, "-o", tmp_path / "out", "--checkpoint", tmp_path / "ck", "-q")
    assert cli("run", fraud_plan[0], *follow).code == 0
    (tmp_path / "out" / "matches" / "part-00000.jsonl").write_text("")
    cli("run", fraud_plan[0], *follow).one_error("part-00000.jsonl", "fewer than")


def test_matches_written_after_the_checkpoint_are_written_once(fraud_plan, tmp_path):
    """A finished stream's output holds matches written after its last checkpoint (the final
    drain), and a half-written line as a kill in the middle of a write leaves: a restart with
    the same arguments cuts both off and writes them again — the batch run's matches, once."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "events.csv").write_text("".join(_lines()))
    (source / "_END").touch()
    out = tmp_path / "out"
    follow = ("run", fraud_plan[0], "--follow", source, "-o", out, "--checkpoint",
              tmp_path / "ck", "-q")
    _made(*follow)
    with open(out / "matches" / "part-00000.jsonl", "a") as matches:
        matches.write('{"pattern": "card_test')
    _made(*follow)
    batch = (fraud_plan[1] / "matches" / "part-00000.jsonl").read_text().splitlines()
    assert Counter(_matches(out)) == Counter(batch)


@pytest.mark.parametrize("place", ["in", "out"])
def test_checkpoint_in_the_followed_or_output_directory(cli, fraud_plan, tmp_path, place):
    (tmp_path / "in").mkdir()
    cli("run", fraud_plan[0], "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "--checkpoint", tmp_path / place, "-q").one_error("--checkpoint", "directory of its own")


def test_stopped_by_sigterm_then_restarted(fraud_plan, tmp_path):
    """SIGTERM drains what was received: the first file ends with an event completing a
    match, which the drain writes (the watermark has not passed it); a restart with the
    checkpoint cuts it off and goes on from the last micro-batch: with the rest of the
    files, the batch run's matches, once each."""
    header, rows = _lines()[0], _lines()[1:]
    batch = (fraud_plan[1] / "matches" / "part-00000.jsonl").read_text().splitlines()
    completing = sorted(max(e["id"] for e in json.loads(line)["events"].values())
                        for line in batch)  # ids: row positions (the file is in ts order)
    half = completing[len(completing) // 2] + 1
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    source.mkdir()
    _drop(source, "part-0.csv", header + "".join(rows[:half]))
    args = ["run", fraud_plan[0], "--follow", source, "-o", out, "--checkpoint", checkpoint,
            "-q", "--trigger", "0.02"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    follow = subprocess.Popen([sys.executable, "-m", "cepplan", *map(str, args)], env=env,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + BOUND
        while len(recorded_files(checkpoint)) < 1:
            assert time.monotonic() < deadline and follow.poll() is None
            time.sleep(0.01)
        follow.send_signal(signal.SIGTERM)
        assert follow.wait(timeout=BOUND) == 0, follow.stderr.read().decode()
    finally:
        follow.kill()
    _drop(source, "part-1.csv", header + "".join(rows[half:]))
    (source / "_END").touch()
    _made(*args)
    assert Counter(_matches(out)) == Counter(batch)


def test_checkpoint_that_is_not_one(cli, fraud_plan, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "checkpoint.arrow").write_bytes(b"PK\x03\x04 not arrow")
    cli("run", fraud_plan[0], "--follow", tmp_path / "in", "-o", tmp_path / "out",
        "--checkpoint", tmp_path / "ck", "-q").one_error("checkpoint.arrow",
                                                         "not a cepplan checkpoint")


def test_killed_while_writing_the_first_checkpoint(cli, fraud_plan, tmp_path):
    """A kill while the first checkpoint was being written leaves only its hidden temporary
    file: the restart starts the stream afresh instead of refusing the directory."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "events.csv").write_text("".join(_lines()))
    (source / "_END").touch()
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / ".checkpoint.arrow.x1y2.tmp").write_bytes(b"ARROW1")
    assert cli("run", fraud_plan[0], "--follow", source, "-o", tmp_path / "out",
               "--checkpoint", tmp_path / "ck", "-q").code == 0
    assert _matches(tmp_path / "out") == _matches(fraud_plan[1])
