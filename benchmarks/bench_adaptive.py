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
   interleaved pairs of runs.
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


def main(quick: bool = False) -> None:
    print(f"load average at start: {_load()} (a shared machine: wall figures move with it)")
    with tempfile.TemporaryDirectory() as folder:
        drift(Path(folder), quick)
        stationary(Path(folder), quick)
