"""Cancel means cancel. SIGINT and SIGTERM at several points of `cepplan run` and `cepplan
stats`: exit 130 / 143 with one line, the earlier output intact byte for byte, no process left
running, no temporary directory left behind. The shared mechanics (process-group stop, staged
output, stale clean-up) are tested directly first, without Spark.

The Spark cases are parametrised by engine so the in-process engine joins by adding "local".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cepplan.interrupt import (
    OLD_PREFIX,
    STAGING_PREFIX,
    Interrupted,
    clean_stale_staging,
    run_child_group,
    scratch_directory,
    staged_directory,
)
from tests.hostile.conftest import EXAMPLES, ROOT
from tests.in_process import cepplan

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

FRAUD = EXAMPLES / "fraud"


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (by parent links in /proc)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _ignores_ctrl_c(pid: int) -> bool:
    """Whether the process ignores SIGINT (its /proc status's SigIgn mask)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # gone: nothing left to start up
    ignored = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(ignored.split()[1], 16) >> (signal.SIGINT - 1) & 1)


def _gone(pids: set[int], seconds: float = 20.0) -> set[int]:
    """The pids still running after waiting up to `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {p for p in pids if _alive(p)}
        if not left:
            return set()
        time.sleep(0.2)
    return {p for p in pids if _alive(p)}


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# -- the shared mechanics, without Spark ------------------------------------------------------

def test_child_group_stopped_whole_on_interruption():
    """A child that started grandchildren: an interruption stops all of them."""
    script = "sleep 300 & sleep 300 & echo ready; wait"
    seen: dict[str, int] = {}

    def on_line(line: str) -> None:
        seen["members"] = len(_descendants(os.getpid()))
        raise Interrupted(signal.SIGTERM)

    before = _descendants(os.getpid())
    with pytest.raises(Interrupted):
        run_child_group(["sh", "-c", script], on_line=on_line)
    assert seen["members"] >= 3
    assert not _gone(_descendants(os.getpid()) - before, 5)


def test_signal_lost_in_an_at_fork_hook_still_stops_the_child(capfd):
    """A signal handled inside a callback whose exceptions Python ignores (here an at-fork
    hook, as logging's runs while subprocess forks): no "Exception ignored" traceback, and the
    child is stopped and the interruption raised all the same (a SIGTERM at that moment let
    `cepplan run` finish and exit 0)."""
    import cepplan.interrupt as interrupt_module
    from cepplan.interrupt import signals_interrupt

    armed = [True]

    def fire() -> None:
        if armed:
            armed.clear()
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs here, inside the hook

    os.register_at_fork(after_in_parent=fire)
    before = _descendants(os.getpid())
    try:
        with pytest.raises(Interrupted), signals_interrupt():
            run_child_group(["sleep", "30"])
    finally:
        interrupt_module._received.clear()  # as a new command starts: nothing received yet
    assert "Exception ignored" not in capfd.readouterr().err
    assert not _gone(_descendants(os.getpid()) - before, 10)


def test_child_group_exit_code_and_lines():
    lines = []
    code = run_child_group(["sh", "-c", "echo one; echo two >&2; exit 3"], on_line=lines.append)
    assert code == 3 and lines == ["one\n", "two\n"]


def test_staged_directory_replaces_only_on_success(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.json").write_bytes(b"earlier")
    with pytest.raises(Interrupted), staged_directory(out) as staged:
        staged.mkdir()
        (staged / "metrics.json").write_bytes(b"half")
        raise Interrupted(signal.SIGINT)
    assert (out / "metrics.json").read_bytes() == b"earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with staged_directory(out) as staged:
        staged.mkdir()
        (staged / "metrics.json").write_bytes(b"new")
    assert (out / "metrics.json").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert oct((out.stat().st_mode) & 0o777) != oct(0o700) or os.umask(0o022) == 0o077


def test_stale_staging_of_a_killed_run_is_cleaned_and_live_ones_kept(tmp_path):
    dead = _dead_pid()
    stale = tmp_path / f"{STAGING_PREFIX}{dead}-abc"
    (stale / "out").mkdir(parents=True)
    live = tmp_path / f"{STAGING_PREFIX}{os.getppid()}-xyz"
    live.mkdir()
    legacy = tmp_path / f"{STAGING_PREFIX}q1w2e3"  # the Spark job's own, no owner known
    legacy.mkdir()
    with staged_directory(tmp_path / "out") as staged:  # a new run tidies first
        staged.mkdir()
    assert not stale.exists() and live.exists() and legacy.exists()


def test_output_caught_mid_swap_is_put_back(tmp_path):
    """Killed between the two renames of a swap: the next run restores the earlier output."""
    dead = _dead_pid()
    parked = tmp_path / f"{OLD_PREFIX}{dead}-out"
    parked.mkdir()
    (parked / "metrics.json").write_bytes(b"earlier")
    clean_stale_staging(tmp_path)
    assert (tmp_path / "out" / "metrics.json").read_bytes() == b"earlier"
    assert not parked.exists()


def test_scratch_of_a_killed_run_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    stale = tmp_path / f"cepplan-job-{_dead_pid()}-zz"
    stale.mkdir()
    with scratch_directory() as scratch:
        assert scratch.parent == tmp_path and not stale.exists()
    assert list(tmp_path.iterdir()) == []


# -- the real command line, in a child process ------------------------------------------------

def _start(args: list[str], tmp: Path) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "cepplan", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(process: subprocess.Popen, ready, scratch: Path,
              seconds: float = 120.0) -> set[int]:
    """Poll until `ready(descendant command lines, scratch folder)`; return the descendants
    seen so far."""
    deadline = time.monotonic() + seconds
    seen: set[int] = set()
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        current = _descendants(process.pid)
        seen |= current
        if ready([_cmdline(p) for p in current], scratch):
            return seen
        time.sleep(0.1)
    raise AssertionError("the point to interrupt at was never reached")


def _earlier_output(folder: Path) -> dict[str, bytes]:
    """An earlier result directory with distinctive bytes."""
    (folder / "matches").mkdir(parents=True)
    files = {"metrics.json": json.dumps({"earlier": True}).encode(),
             "matches/part-00000.jsonl": os.urandom(64).hex().encode() + b"\n"}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _made(*args: object) -> None:
    """A fixture's input, made by `cepplan ARGS...` in this process (not what is tested)."""
    done = cepplan(*args)
    assert done.returncode == 0, done.stderr


POINTS = {  # (command lines of the descendants, the run's TMPDIR) -> reached
    "job-generated": lambda cmds, tmp: any(tmp.iterdir()),  # cepplan-job-*: before Spark
    "jvm-started": lambda cmds, tmp: any("java" in c for c in cmds),
    "job-running": lambda cmds, tmp: any("job.py" in c for c in cmds),
}
CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("plan")
    _made("optimize", FRAUD / "workload.json", "-o", folder / "plan.json", "--quiet")
    return folder / "plan.json"


@pytest.mark.case_seconds(300)
@pytest.mark.parametrize("engine", ["spark"])
@pytest.mark.parametrize(("signum", "point"), [
    (signal.SIGINT, "jvm-started"), (signal.SIGTERM, "job-running"),
    (signal.SIGTERM, "job-generated"), (signal.SIGINT, "job-running")],
    ids=["SIGINT-jvm-started", "SIGTERM-job-running", "SIGTERM-job-generated",
         "SIGINT-job-running"])
def test_run_interrupted(tmp_path, plan, engine, signum, point):
    out = tmp_path / "results" / "out"
    earlier = _earlier_output(out)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = _start(["run", str(plan), str(FRAUD / "events.csv"), "-o", str(out), "--quiet",
                      "--engine", engine], scratch)
    seen = _wait_for(process, POINTS[point], scratch)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == CODES[signum], err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cepplan: "), err
    assert "Traceback" not in err
    assert not _gone(seen), [_cmdline(p) for p in seen if _alive(p)]
    assert _snapshot(out) == earlier  # byte for byte
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no staging left
    assert list(scratch.iterdir()) == []  # no cepplan-job-* left


@pytest.mark.case_seconds(300)
@pytest.mark.parametrize("engine", ["spark"])
def test_run_killed_leaves_no_process_and_next_run_cleans(tmp_path, plan, engine):
    out = tmp_path / "results" / "out"
    earlier = _earlier_output(out)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = _start(["run", str(plan), str(FRAUD / "events.csv"), "-o", str(out), "--quiet",
                      "--engine", engine], scratch)
    seen = _wait_for(process, POINTS["job-running"], scratch)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert not _gone(seen, 30), [_cmdline(p) for p in seen if _alive(p)]
    assert _snapshot(out) == earlier
    leftovers = [p for p in out.parent.iterdir() if p.name != "out"]
    assert leftovers and all(p.name.startswith(STAGING_PREFIX) for p in leftovers)
    assert clean_stale_staging(out.parent) == leftovers  # what the next run does first
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


STATS_POINTS = {  # where to interrupt `cepplan stats --engine spark`, and after how long
    "jvm-starting": (POINTS["jvm-started"], 0.0),  # pyspark still waits for the JVM's port
    "jvm-started": (POINTS["jvm-started"], 3.0),  # the session starting or the job begun
    "job-running": (None, 0.5),  # a descendant (the JVM) has the events open: set per test
}


@pytest.mark.case_seconds(300)
@pytest.mark.parametrize("engine", ["spark"])
@pytest.mark.parametrize(("signum", "point"), [
    (signal.SIGINT, "jvm-starting"), (signal.SIGINT, "jvm-started"),
    (signal.SIGINT, "job-running"), (signal.SIGTERM, "jvm-started"),
    (signal.SIGTERM, "job-running")],
    ids=["SIGINT-jvm-starting", "SIGINT-jvm-started", "SIGINT-job-running",
         "SIGTERM-jvm-started", "SIGTERM-job-running"])
def test_stats_interrupted(tmp_path, big_fraud, engine, signum, point):
    """Ctrl-C / SIGTERM while pyspark starts its JVM, while the session starts, and while the
    JVM reads the events: our line only (no py4j traceback, no Java exception), the exit code,
    stats.json byte for byte, no process (the JVM) left, no temporary directory left."""
    out = tmp_path / "stats.json"
    out.write_bytes(b'{"earlier": true}\n')
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = _start(["stats", str(big_fraud), "-w", str(FRAUD / "workload.json"),
                      "-o", str(out), "--quiet", "--engine", engine], scratch)
    ready, pause = STATS_POINTS[point]
    if ready is None:
        def ready(_cmds, _tmp):
            return any(_has_open(pid, big_fraud) for pid in _descendants(process.pid))
    seen = _wait_for(process, ready, scratch, seconds=180)
    time.sleep(pause)
    assert process.poll() is None, "statistics ended before they could be interrupted"
    process.send_signal(signum)
    # the JVM is stopped group-wide, SIGKILL after a grace; on a loaded machine with the
    # suite on both cores that took over 60 s once (the bound is for a hang, not a speed)
    _, err = process.communicate(timeout=120)
    assert process.returncode == CODES[signum], err
    assert "Traceback" not in err and "py4j" not in err.lower(), err
    assert "Exception" not in err and "KeyboardInterrupt" not in err, err
    ours = [line for line in err.splitlines() if line.startswith(("cepplan:", "error:"))]
    assert len(ours) == 1 and ("interrupted" in ours[0] or "stopped by" in ours[0]), err
    assert err.rstrip().splitlines()[-1] == ours[0], err  # nothing printed after our line
    assert not _gone(seen, 30), [_cmdline(p) for p in seen if _alive(p)]
    assert out.read_bytes() == b'{"earlier": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats.json", "tmp"]
    assert list(scratch.iterdir()) == []  # pyspark's port folder removed too


@pytest.fixture(scope="module")
def big_fraud(tmp_path_factory) -> Path:
    """Fraud events for 400,000 minutes (about 3.2 million rows): long enough in-process to
    be interrupted while reading, matching or writing (the run takes about 7 s here, idle)."""
    events = tmp_path_factory.mktemp("big") / "events.csv"
    _made("synth", FRAUD / "workload.json", "-o", events, "--duration", "400000", "--seed", "3",
          "-q")
    return events


@pytest.mark.case_seconds(300)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("after", [0.3, 1.0, 2.0], ids=["early", "middle", "late"])
def test_local_run_interrupted(tmp_path, plan, big_fraud, signum, after):
    """The in-process engine interrupted at several points of its run: one line, the exit
    code, the earlier output byte for byte, no staging left."""
    out = tmp_path / "results" / "out"
    earlier = _earlier_output(out)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = _start(["run", str(plan), str(big_fraud), "-o", str(out), "--quiet",
                      "--engine", "local"], scratch)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(STAGING_PREFIX) for p in out.parent.iterdir()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    time.sleep(after)
    assert process.poll() is None, "the run ended before it could be interrupted"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == CODES[signum], err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cepplan: "), err
    assert _snapshot(out) == earlier
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]


@pytest.mark.case_seconds(120)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_local_stats_interrupted(tmp_path, big_fraud, signum):
    out = tmp_path / "stats.json"
    out.write_bytes(b'{"earlier": true}\n')
    process = _start(["stats", str(big_fraud), "-w", str(FRAUD / "workload.json"), "-o",
                      str(out), "--quiet", "--engine", "local"], tmp_path)
    deadline = time.monotonic() + 120  # interrupted while it reads the events
    while not _has_open(process.pid, big_fraud) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    assert process.poll() is None, "statistics ended before they could be interrupted"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == CODES[signum], err
    assert "Traceback" not in err and err.strip().startswith("cepplan: ")
    assert out.read_bytes() == b'{"earlier": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats.json"]


def test_optimize_interrupted_keeps_earlier_plan(tmp_path):
    """A long in-process command (no child): one line, exit code, plan untouched."""
    from tests.hostile.test_solver_limits import wide_workload
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(wide_workload("SEQ")))
    plan = tmp_path / "plan.json"
    plan.write_bytes(b"earlier plan")
    process = _start(["optimize", str(workload), "--time-limit", "120", "-o", str(plan)],
                     tmp_path)
    time.sleep(4)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143 and err.strip().startswith("cepplan: stopped by SIGTERM")
    assert plan.read_bytes() == b"earlier plan"


@pytest.fixture(scope="module")
def dense_bars(tmp_path_factory) -> tuple[Path, Path]:
    """400,000 minute bars and a plan of a dense pattern over them (three rising GOOG peaks
    within 50 minutes: millions of matches), long enough to be interrupted while worker
    processes match."""
    from benchmarks.stock_bars import workload, write_bars

    folder = tmp_path_factory.mktemp("bars")
    write_bars(folder / "bars.txt", 400_000)
    wl = workload([])
    wl["patterns"] = [{"name": "p", "structure": ["SEQ", "a:GOOG", "b:GOOG", "c:GOOG"],
                       "where": ["a.peak < b.peak", "b.peak < c.peak"], "within": 50}]
    (folder / "workload.json").write_text(json.dumps(wl))
    _made("optimize", folder / "workload.json", "-o", folder / "plan.json", "--quiet")
    return folder / "plan.json", folder / "bars.txt"


@pytest.mark.case_seconds(120)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_local_run_with_workers_interrupted(tmp_path, dense_bars, signum):
    """Interrupted while cepplan and two worker processes (`--workers 3`) match (SIGINT to
    the whole process group, as
    the terminal's Ctrl-C sends it; SIGTERM to cepplan alone): no process of the run left,
    one line, the exit code, the earlier output byte for byte, no staging left."""
    plan, bars = dense_bars
    out = tmp_path / "results" / "out"
    earlier = _earlier_output(out)
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(ROOT),
               CEPPLAN_MATCH_MEMORY="1G")
    process = subprocess.Popen([sys.executable, "-m", "cepplan", "run", str(plan), str(bars),
                                "-o", str(out), "--quiet", "--engine", "local",
                                "--workers", "3"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    # both workers matching: their part files begun (under TMPDIR, beside the staging)
    seen = _wait_for(process, lambda cmds, tmp: len(cmds) == 2 and len(
        list(tmp.rglob("range-0000[12]"))) == 2, tmp_path, seconds=60)
    workers = _descendants(process.pid)
    deadline = time.monotonic() + 60
    while not all(_ignores_ctrl_c(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    if signum == signal.SIGINT:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == CODES[signum], err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cepplan: "), err
    assert _gone(seen) == set()
    assert _snapshot(out) == earlier
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
