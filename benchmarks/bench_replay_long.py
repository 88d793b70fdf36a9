"""A long live stream: `cepplan replay --rate R | cepplan run --follow -` over 10^7 minute bars
paced to last 30 minutes (2*10^5 bars over 1 minute with --quick), GOOG and MSFT patterns of the
engine benchmark. Samples the streaming process's resident memory 30 times along the way and
prints the curve beside the bars fed so far: flat means the state is bounded by the windows,
not by the stream (the streaming issue's target). Its matches are compared with `cepplan run`
on the same file.

Environment: CEPPLAN_BENCH_REPLAY_ROWS and CEPPLAN_BENCH_REPLAY_MINUTES override the sizes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.bench_streaming import CLI, ROOT, batch, bench_env, planned_bars, read_metrics

SAMPLES = 30


def resident_mb(pid: int) -> float:
    """The process's resident memory now (VmRSS), in MB; 0 once it has ended."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def match_digest(out: Path) -> tuple[int, int]:
    """(lines, sum of their 64-bit hashes): the same for the same matches in any order, read
    line by line (10^7 bars write some 13 GB of matches: sorting them in memory was killed)."""
    lines = total = 0
    with (out / "matches" / "part-00000.jsonl").open("rb") as handle:
        for line in handle:
            lines += 1
            total += int.from_bytes(hashlib.blake2b(line.rstrip(b"\n"), digest_size=8).digest())
    return lines, total % (1 << 64)


def paced_stream(plan: Path, workload: Path, bars: Path, out: Path, rate: float,
                 every: float) -> tuple[float, list[tuple[float, float]]]:
    """(wall seconds, [(seconds since start, resident MB of the streaming process)])."""
    start = time.perf_counter()
    feed = subprocess.Popen([*CLI, "replay", str(bars), "-w", str(workload), "--to", "-", "-q",
                             "--rate", f"{rate:.0f}"], stdout=subprocess.PIPE, env=bench_env(),
                            cwd=ROOT)
    follow = subprocess.Popen([*CLI, "run", str(plan), "--follow", "-", "-o", str(out), "-q",
                               "--trigger", "1"], stdin=feed.stdout, env=bench_env(), cwd=ROOT)
    feed.stdout.close()
    curve = []
    while follow.poll() is None:
        time.sleep(every)
        curve.append((time.perf_counter() - start, resident_mb(follow.pid)))
    if feed.wait() or follow.returncode:
        raise RuntimeError("the streamed run failed")
    return time.perf_counter() - start, curve


def main(quick: bool = False) -> None:
    rows = int(os.environ.get("CEPPLAN_BENCH_REPLAY_ROWS", 200_000 if quick else 10_000_000))
    minutes = float(os.environ.get("CEPPLAN_BENCH_REPLAY_MINUTES", 1 if quick else 30))
    rate = rows / (60 * minutes)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        workload, plan, bars = planned_bars(scratch, rows)
        print(f"{rows:,} minute bars replayed at {rate:,.0f} bars/s (planned {minutes:g} min), "
              "GOOG + MSFT patterns, 1 s micro-batches")
        wall, curve = paced_stream(plan, workload, bars, scratch / "stream", rate,
                                   60 * minutes / SAMPLES)
        print(f"{'minute':>7} {'bars fed (planned)':>19} {'resident MB':>12}")
        for seconds, mb in curve:
            if mb:
                print(f"{seconds / 60:>7.1f} {min(rows, rate * seconds):>19,.0f} {mb:>12.0f}")
        held = [mb for _, mb in curve if mb]
        half = held[len(held) // 2:] or held
        stream = read_metrics(scratch / "stream")["stream"]
        batch(plan, bars, scratch / "batch")
        same = match_digest(scratch / "batch") == match_digest(scratch / "stream")
        print(f"wall {wall / 60:.1f} min for {minutes:g} planned; resident memory: "
              f"{min(held):.0f}-{max(held):.0f} MB, second half {min(half):.0f}-{max(half):.0f} "
              f"MB; state rows (max) {stream['state_rows_max']:,}; late events "
              f"{sum(stream['late_events'].values())}; same matches as the batch run: {same}")
