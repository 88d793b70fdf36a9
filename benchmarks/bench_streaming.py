"""Streaming benchmarks: `cepplan run --follow -` fed by `cepplan replay` through a pipe,
against `cepplan run` on the same file (process start to files written; one run):

a. throughput: the GOOG and MSFT patterns of the engine benchmark over synthetic minute
   bars, and the fraud example's workload over events at its rates, streamed as fast as the
   replay writes (micro-batches of --trigger 1 s or 8 MiB of input) vs the batch engine
   (target >= 70 %); the matches are the batch run's;
b. detection latency p99 at half the rate the stream sustained in (a), 1 s micro-batches
   (target <= 2 micro-batch intervals);
c. state: the most tagged rows the stream held, over replays of 1x, 2x and 4x the rows
   (flat: bounded by the windows, not by the stream);
d. kill -9 at 5 seeded random points of a stream into a directory with --checkpoint, each
   time restarted with the same arguments: the matches are the batch run's, none missing,
   none twice (and the wall time beside the same stream without a checkpoint).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.stock_bars import write_bars, write_workload

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "cepplan"]
PATTERNS = ["goog", "msft"]


def bench_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far: the load-robust
    figure on a shared machine."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CPU: list[float] = []  # CPU seconds of each timed command, in order


def timed(run):
    """Wall seconds of `run()`; its child processes' CPU seconds appended to `CPU`."""
    def wrapper(*args, **kwargs) -> float:
        cpu = children_cpu()
        wall = run(*args, **kwargs)
        CPU.append(children_cpu() - cpu)
        return wall
    return wrapper


@timed
def batch(plan: Path, bars: Path, out: Path, *run: str) -> float:
    """Wall seconds of `cepplan run` on the file (`run`: more of its options)."""
    start = time.perf_counter()
    subprocess.run([*CLI, "run", str(plan), str(bars), "-o", str(out), "-q", *run],
                   check=True, env=bench_env(), cwd=ROOT)
    return time.perf_counter() - start


@timed
def streamed(plan: Path, workload: Path, bars: Path, out: Path, *replay: str,
             run: tuple[str, ...] = ()) -> float:
    """Wall seconds of `cepplan replay ... --to - | cepplan run --follow - ...` (`run`: more
    of its options)."""
    start = time.perf_counter()
    feed = subprocess.Popen([*CLI, "replay", str(bars), "-w", str(workload), "--to", "-", "-q",
                             *replay], stdout=subprocess.PIPE, env=bench_env(), cwd=ROOT)
    follow = subprocess.run([*CLI, "run", str(plan), "--follow", "-", "-o", str(out), "-q",
                             "--trigger", "1", *run], stdin=feed.stdout, env=bench_env(),
                            cwd=ROOT)
    feed.stdout.close()
    if feed.wait() or follow.returncode:
        raise RuntimeError("the streamed run failed")
    return time.perf_counter() - start


@timed
def followed(plan: Path, events: Path, out: Path, *run: str) -> float:
    """Wall seconds of `cepplan run --follow - < FILE`: the stream without a replay process
    beside it (standard input already in ts order; `run`: more of its options)."""
    start = time.perf_counter()
    with events.open("rb") as stdin:
        subprocess.run([*CLI, "run", str(plan), "--follow", "-", "-o", str(out), "-q",
                        "--trigger", "1", *run], stdin=stdin, check=True, env=bench_env(),
                       cwd=ROOT)
    return time.perf_counter() - start


def _drop_parts(bars: Path, source: Path, parts: int) -> list[Path]:
    """The bars cut into `parts` files (in order), written hidden beside `source`'s files:
    renamed into it one by one, each appears complete."""
    lines = bars.read_bytes().splitlines(keepends=True)
    hidden = []
    for i in range(parts):
        part = source / f".part-{i:04d}.txt"
        part.write_bytes(b"".join(lines[len(lines) * i // parts:len(lines) * (i + 1) // parts]))
        hidden.append(part)
    return hidden


def killed_and_restarted(plan: Path, bars: Path, out: Path, checkpoint: Path | None,
                         kills: int = 5, parts: int = 40) -> float:
    """Wall seconds of `run --follow DIR` over the bars in `parts` files, renamed into DIR one
    by one; with a checkpoint, killed (SIGKILL) after `kills` seeded random numbers of files
    once the checkpoint records them (or all but the last), and restarted each time."""
    from cepplan.engine_adapter.local.checkpoint import recorded_files

    source = out.parent / f"{out.name}-in"
    source.mkdir()
    hidden = _drop_parts(bars, source, parts)
    command = [*CLI, "run", str(plan), "--follow", str(source), "-o", str(out), "-q",
               "--trigger", "0.1", *(["--checkpoint", str(checkpoint)] if checkpoint else [])]
    rng = random.Random(24)
    points = sorted(rng.sample(range(1, parts), kills)) if checkpoint else []
    start, dropped = time.perf_counter(), 0
    for point in points:
        follow = subprocess.Popen(command, env=bench_env(), cwd=ROOT)
        while dropped < point:
            hidden[dropped].rename(source / hidden[dropped].name[1:])
            dropped += 1
        wanted = point - rng.randint(0, 1)
        while len(recorded_files(checkpoint)) < wanted and follow.poll() is None:
            time.sleep(0.01)
        follow.kill()
        follow.wait()
    for part in hidden[dropped:]:
        part.rename(source / part.name[1:])
    (source / "_END").touch()
    subprocess.run(command, check=True, env=bench_env(), cwd=ROOT)
    return time.perf_counter() - start


def sorted_matches(out: Path) -> list[str]:
    return sorted((out / "matches" / "part-00000.jsonl").read_text().splitlines())


def read_metrics(out: Path) -> dict:
    return json.loads((out / "metrics.json").read_text())


def planned_bars(scratch: Path, rows: int) -> tuple[Path, Path, Path]:
    """The GOOG + MSFT workload, its plan (`cepplan optimize`) and `rows` minute bars, in
    `scratch`: what both streaming benchmarks run."""
    workload, plan = scratch / "workload.json", scratch / "plan.json"
    write_workload(workload, PATTERNS)
    subprocess.run([*CLI, "optimize", str(workload), "-o", str(plan), "-q"], check=True,
                   env=bench_env(), cwd=ROOT)
    bars = scratch / "bars.txt"
    write_bars(bars, rows)
    return workload, plan, bars


def throughput(scratch: Path, plan: Path, workload: Path, events: Path, rows: int,
               *run: str) -> float:
    """Print the batch run, the replayed stream and the stream read from standard input,
    side by side; the replayed stream's wall seconds."""
    scratch.mkdir()
    batch_s = batch(plan, events, scratch / "batch", *run)
    stream_s = streamed(plan, workload, events, scratch / "stream", run=run)
    alone_s = followed(plan, events, scratch / "alone", *run)
    same = (sorted_matches(scratch / "batch") == sorted_matches(scratch / "stream")
            == sorted_matches(scratch / "alone"))
    stream = read_metrics(scratch / "stream")["stream"]
    cpu = dict(zip(("batch", "stream", "alone"), CPU[-3:], strict=True))
    print(f"{'run':<30} {'seconds':>8} {'rows/s':>10} {'of batch':>9} {'cpu s':>7} "
          f"{'of batch (cpu)':>15}")
    for label, seconds, key in (("cepplan run (batch)", batch_s, "batch"),
                                ("replay | run --follow -", stream_s, "stream"),
                                ("run --follow - < file", alone_s, "alone")):
        print(f"{label:<30} {seconds:>8.2f} {rows / seconds:>10,.0f} "
              f"{batch_s / seconds:>9.0%} {cpu[key]:>7.2f} {cpu['batch'] / cpu[key]:>15.0%}")
    print("(the replay row's CPU includes the replay process: reading, sorting, writing)")
    print(f"target: streaming >= 70 % of batch; micro-batches: {stream['micro_batches']}; "
          f"matches {len(sorted_matches(scratch / 'batch')):,}, the same in all three: {same}")
    return stream_s


def planned_fraud(scratch: Path, rows: int) -> tuple[Path, Path, Path, int]:
    """The fraud example's workload, its plan, about `rows` events at its rates and their
    number."""
    from benchmarks.bench_adaptive import RATE
    from benchmarks.drifting_fraud import FRAUD, drifting_events, fraud_workload
    from cepplan.stats.synth_write import write_events

    plan, events = scratch / "fraud-plan.json", scratch / "fraud.csv"
    subprocess.run([*CLI, "optimize", str(FRAUD), "-o", str(plan), "-q"], check=True,
                   env=bench_env(), cwd=ROOT)
    workload = fraud_workload()
    frame = drifting_events(workload, [(rows / RATE, {})], seed=7)
    write_events(frame, workload, events)
    return FRAUD, plan, events, len(frame)


def main(quick: bool = False) -> None:
    rows = 100_000 if quick else 1_000_000
    print(f"load average at start: {os.getloadavg()[0]:.1f} (a shared machine: wall figures "
          "move with it)")
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        workload, plan, bars = planned_bars(scratch, rows)

        print(f"\na. throughput, GOOG + MSFT patterns, {rows:,} minute bars")
        stream_s = throughput(scratch / "bars", plan, workload, bars, rows)
        fraud, fraud_plan, fraud_events, events = planned_fraud(scratch, rows)
        print(f"\na. throughput, the fraud example's workload, {events:,} events at its rates")
        throughput(scratch / "fraud", fraud_plan, fraud, fraud_events, events, "-w", str(fraud))

        rate = max(rows / stream_s / 2, 100.0)
        lat_rows = min(rows, int(rate * (20 if quick else 60)))
        lat_bars = scratch / "lat.txt"
        write_bars(lat_bars, lat_rows)
        print(f"\nb. detection latency at half the sustained rate: {rate:,.0f} rows/s, "
              f"{lat_rows:,} rows, 1 s micro-batches")
        streamed(plan, workload, lat_bars, scratch / "lat", "--rate", f"{rate:.0f}")
        figures = read_metrics(scratch / "lat")["stream"]["detection_latency_seconds"]
        for name, f in figures.items():
            print(f"  {name:<6} matches {f['matches']:>8,}  p50 {f['p50']:.3f} s  "
                  f"p99 {f['p99']:.3f} s  max {f['max']:.3f} s  "
                  f"p99 = {f['p99']:.2f} micro-batches (target <= 2)")

        print("\nc. state over longer streams (as fast as written)")
        print(f"{'rows':>10} {'state rows (max)':>17}")
        base = max(rows // 4, 10_000)
        for factor in (1, 2, 4):
            long_bars = scratch / f"long-{factor}.txt"
            write_bars(long_bars, base * factor)
            streamed(plan, workload, long_bars, scratch / f"long-{factor}")
            state = read_metrics(scratch / f"long-{factor}")["stream"]["state_rows_max"]
            print(f"{base * factor:>10,} {state:>17,}")

        kill_rows = min(rows, 200_000)
        kill_bars = scratch / "kill.txt"
        write_bars(kill_bars, kill_rows)
        batch(plan, kill_bars, scratch / "kill-batch")
        print(f"\nd. kill -9 at 5 seeded points of a stream into a directory, {kill_rows:,} "
              "rows in 40 files, restarted from --checkpoint each time")
        plain_s = killed_and_restarted(plan, kill_bars, scratch / "plain", None)
        killed_s = killed_and_restarted(plan, kill_bars, scratch / "killed", scratch / "ckpt")
        expected = sorted_matches(scratch / "kill-batch")
        got = sorted_matches(scratch / "killed")
        print(f"matches {len(got):,} (batch {len(expected):,}); equal as a multiset: "
              f"{got == expected}; same without kills: "
              f"{sorted_matches(scratch / 'plain') == expected}")
        print(f"wall: {plain_s:.2f} s without a checkpoint, {killed_s:.2f} s with one and "
              "5 kills and restarts")
