"""Adaptive re-planning on a live stream: `cepplan run --follow - --adaptive` against the same
stream with the plan kept (`--follow -` without `--adaptive`) and `cepplan run` on the file
(the stream is the file on standard input, read as fast as the engine goes):

a. drift: the fraud workload planned from its inline rates, streamed over a phase at those
   rates and then a fraud wave (the rare trigger PasswordReset and Withdrawal frequent,
   Login rare): wall time and throughput, adaptive vs static (target >= 1.5x), the re-plans
   (when, why, time to re-plan and switch, modelled gain, throughput before and after), and
   the matches, which must be the batch run's;
b. a stationary stream of 10^7 events (10^6 with --quick): re-plans (target 0) and the
   overhead of the online statistics, adaptive vs static (target <= 5 %), the median of
   interleaved pairs of runs;
c. the drift of a. (--quick's size) on Spark (`--engine spark --master local[2]`): the
   stream dropped into a directory a file per 250 minutes of event time, each after the last
   micro-batch committed, static vs adaptive: the stateful step's throughput (events per
   second of its work), the switch, and the matches, which must be the batch run's.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.drifting_fraud import FRAUD, WAVE, drifting_events, fraud_workload
from cepplan.stats.synth_write import write_events

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "cepplan"]
RATE = 7.92  # events per minute at the workload's inline rates
PAIRS = 3  # interleaved static and adaptive runs of the stationary stream: one pair moves by
# several points between runs on a quiet machine


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: list[str], stdin: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of `cepplan ARGS` (standard input from `stdin`)."""
    start, cpu = time.perf_counter(), _cpu()
    with (stdin.open("rb") if stdin else open(os.devnull, "rb")) as feed:
        subprocess.run([*CLI, *args], stdin=feed, check=True, env=_env(), cwd=ROOT)
    return time.perf_counter() - start, _cpu() - cpu


def _follow(plan: Path, events: Path, out: Path, *extra: str) -> tuple[float, float, dict]:
    wall, cpu = _run(["run", str(plan), "-w", str(FRAUD), "--follow", "-", "-o", str(out),
                      "-q", *extra], events)
    return wall, cpu, json.loads((out / "metrics.json").read_text())


def _matches(out: Path) -> list[str]:
    """The matches as a multiset, each with its keys in one order (the order of a match's
    variables follows its plan's join order)."""
    lines = (out / "matches" / "part-00000.jsonl").read_text().splitlines()
    return sorted(json.dumps(json.loads(line), sort_keys=True) for line in lines)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def drift(scratch: Path, quick: bool) -> None:
    workload = fraud_workload()
    calm, wave = (3_000.0, 3_000.0) if quick else (10_000.0, 12_000.0)
    events = drifting_events(workload, [(calm, {}), (wave, WAVE)], seed=1)
    path = scratch / "drift.csv"
    write_events(events, workload, path)
    plan = scratch / "plan.json"
    _run(["optimize", str(FRAUD), "-o", str(plan), "-q"])
    print(f"\na. drift: {len(events):,} events, {calm:g} min at the planned rates, then "
          f"{wave:g} min of a fraud wave ({', '.join(f'{k} {v:g}/min' for k, v in WAVE.items())})"
          f"; load {_load()}")
    batch_wall, _ = _run(["run", str(plan), "-w", str(FRAUD), str(path), "-o",
                          str(scratch / "batch"), "-q"])
    static = _follow(plan, path, scratch / "static")
    adaptive = _follow(plan, path, scratch / "adaptive", "--adaptive")
    same = _matches(scratch / "batch") == _matches(scratch / "static") == _matches(
        scratch / "adaptive")
    print(f"{'run':<28} {'wall s':>7} {'cpu s':>7} {'events/s':>10} {'micro-batches':>14}")
    print(f"{'cepplan run (batch)':<28} {batch_wall:>7.2f}")
    for label, (wall, cpu, metrics) in (("--follow - (static plan)", static),
                                        ("--follow - --adaptive", adaptive)):
        print(f"{label:<28} {wall:>7.2f} {cpu:>7.2f} {len(events) / wall:>10,.0f} "
              f"{metrics['stream']['micro_batches']:>14}")
    print(f"adaptive / static throughput: wall {static[0] / adaptive[0]:.2f}x, cpu "
          f"{static[1] / adaptive[1]:.2f}x (target >= 1.5x); matches equal to the batch "
          f"run's: {same}; load {_load()}")
    stream = adaptive[2]["stream"]
    for record in stream["replans"]:
        print(f"  re-plan at micro-batch {record['micro_batch']}, watermark "
              f"{record['watermark']:,.0f} min ({record['watermark'] - calm:,.0f} min after the "
              f"change), in {record['replan_seconds']:.2f} s; switched: {record['switched']}; "
              f"modelled gain {record['modelled_gain']:.2f}x")
        print(f"    why: {'; '.join(record['reason'])}")
        print(f"    changes: {'; '.join(record['changes']) or '-'}")
        print(f"    throughput over {record['throughput_batches']} micro-batches each side: "
              f"{record['throughput_before'] or 0:,.0f} -> {record['throughput_after'] or 0:,.0f}"
              " events/s")
    if not stream["replans"]:
        print("  no re-plan")
    print(f"  online statistics and re-planning: {stream['statistics_seconds']:.2f} s of "
          f"{adaptive[0]:.2f} s")


def stationary(scratch: Path, quick: bool) -> None:
    workload = fraud_workload()
    size = 1_000_000 if quick else 10_000_000
    path = scratch / "stationary.csv"
    parts = 10
    with path.open("wb") as out:  # written in parts: the generator holds one in memory
        for part in range(parts):
            events = drifting_events(workload, [(size / RATE / parts, {})], seed=100 + part)
            piece = scratch / "piece.csv"
            write_events(events.assign(__ts=events["__ts"] + part * size / RATE / parts),
                         workload, piece)
            lines = piece.read_bytes().splitlines(keepends=True)
            out.writelines(lines if part == 0 else lines[1:])
    rows = sum(1 for _ in path.open("rb")) - 1
    plan = scratch / "plan-stationary.json"
    _run(["optimize", str(FRAUD), "-o", str(plan), "-q"])
    print(f"\nb. stationary stream: {rows:,} events at the planned rates, {PAIRS} pairs of runs "
          f"(static, adaptive) interleaved; load {_load()}")
    print(f"{'run':<28} {'wall s':>7} {'cpu s':>7} {'events/s':>10} {'re-plans':>9} "
          f"{'checks s':>9}")
    walls, cpus = [], []
    for pair in range(PAIRS):
        static = _follow(plan, path, scratch / f"st-static-{pair}")
        adaptive = _follow(plan, path, scratch / f"st-adaptive-{pair}", "--adaptive")
        stream = adaptive[2]["stream"]
        for label, (wall, cpu, _), replans, checks in (
                ("--follow - (static plan)", static, "", ""),
                ("--follow - --adaptive", adaptive, len(stream["replans"]),
                 f"{stream['statistics_seconds']:.2f}")):
            print(f"{label:<28} {wall:>7.2f} {cpu:>7.2f} {rows / wall:>10,.0f} {replans:>9} "
                  f"{checks:>9}")
        walls.append(adaptive[0] / static[0] - 1)
        cpus.append(adaptive[1] / static[1] - 1)
    print(f"overhead of the online statistics, median of {PAIRS} pairs: wall "
          f"{statistics.median(walls):+.1%}, cpu {statistics.median(cpus):+.1%} (target <= 5 %; "
          f"pairs: {', '.join(f'{w:+.1%}/{c:+.1%}' for w, c in zip(walls, cpus, strict=True))});"
          f" load {_load()}")


def on_spark(scratch: Path) -> None:
    workload = fraud_workload()
    calm, wave, piece = 3_000.0, 3_000.0, 250.0
    events = drifting_events(workload, [(calm, {}), (wave, WAVE)], seed=1)
    path, plan = scratch / "spark-drift.csv", scratch / "plan-spark.json"
    write_events(events, workload, path)
    _run(["optimize", str(FRAUD), "-o", str(plan), "-q"])
    _run(["run", str(plan), "-w", str(FRAUD), str(path), "-o", str(scratch / "spark-batch"),
          "-q"])
    print(f"\nc. the drift on Spark (local[2]): {len(events):,} events, {calm:g} min at the "
          f"planned rates, then {wave:g} min of the wave, a file per {piece:g} min; load "
          f"{_load()}")
    print(f"{'run':<34} {'wall s':>7} {'work s':>7} {'events/s of work':>17} "
          f"{'micro-batches':>14}")
    runs = {}
    for label, name, extra in (("--engine spark (static plan)", "spark-static", ()),
                               ("--engine spark --adaptive", "spark-adaptive", ("--adaptive",))):
        wall, metrics = _spark_stream(events, workload, plan, scratch / name, piece, extra)
        work = sum(metrics["seconds"].values())
        runs[label] = (work, metrics)
        print(f"{label:<34} {wall:>7.1f} {work:>7.2f} {len(events) / work:>17,.0f} "
              f"{metrics['stream']['micro_batches']:>14}")
        same = _spark_matches(scratch / name / "out") == _matches(scratch / "spark-batch")
        print(f"{'':<34} matches equal to the batch run's: {same}")
    (static, _), (adaptive, metrics) = runs.values()
    print(f"adaptive / static throughput of the stateful step: {static / adaptive:.2f}x; "
          f"load {_load()}")
    for record in metrics["stream"]["replans"]:
        print(f"  drift reported at micro-batch {record['reported_at']}, re-planned in "
              f"{record['replan_seconds']:.2f} s, switched: {record['switched']} at "
              f"micro-batch {record['micro_batch']} (watermark {record['watermark']:,.0f} "
              f"min); modelled gain {record['modelled_gain']:.2f}x")


def _spark_stream(events, workload, plan: Path, folder: Path, piece: float,
                  extra: tuple[str, ...]) -> tuple[float, dict]:
    """The events through `cepplan run --follow DIR --engine spark`, a file per `piece`
    minutes each dropped once the micro-batch before committed: wall seconds, metrics."""
    source, out, checkpoint = folder / "in", folder / "out", folder / "ckpt"
    source.mkdir(parents=True)
    pieces = (events["__ts"] // piece).to_numpy()
    start = time.perf_counter()
    follow = subprocess.Popen([*CLI, "run", str(plan), "-w", str(FRAUD), "--follow",
                               str(source), "-o", str(out), "--checkpoint", str(checkpoint),
                               "--engine", "spark", "--master", "local[2]", "--trigger", "0.5",
                               "-q", *extra], env=_env(), cwd=ROOT)
    try:
        for number, value in enumerate(sorted(set(pieces))):
            hidden = source / f".part-{number:03d}.csv"
            write_events(events[pieces == value], workload, hidden)
            hidden.rename(source / f"part-{number:03d}.csv")
            while sum(1 for _ in (checkpoint / "spark" / "commits").glob("[0-9]*")) <= number:
                if follow.poll() is not None:
                    raise RuntimeError(f"the stream stopped (exit {follow.returncode})")
                time.sleep(0.1)
        (source / "_END").touch()
        follow.wait()
    finally:
        follow.kill()
        follow.wait()
    return time.perf_counter() - start, json.loads((out / "metrics.json").read_text())


def _spark_matches(out: Path) -> list[str]:
    """The matches the Spark stream's sink wrote, as `_matches` gives them."""
    lines = [line for part in sorted((out / "output=matches").glob("part-*"))
             for line in part.read_text().splitlines()]
    return sorted(json.dumps(json.loads(line), sort_keys=True) for line in lines)


def main(quick: bool = False) -> None:
    print(f"load average at start: {_load()} (a shared machine: wall figures move with it)")
    with tempfile.TemporaryDirectory() as folder:
        drift(Path(folder), quick)
        stationary(Path(folder), quick)
        on_spark(Path(folder))
