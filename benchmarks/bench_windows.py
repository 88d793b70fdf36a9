"""Real window sizes in bounded memory: the in-process engine on synthetic minute bars
(`stock_bars`) with windows from a few to about a thousand events of the bound types, under a
matcher memory budget (`CEPPLAN_MATCH_MEMORY`, default here 1G), wall time and peak resident
memory per row (`python -m cepplan run`, process start to files written).

    python -m benchmarks windows                     # 10^5 rows, budget 1G
    CEPPLAN_BENCH_ROWS=20000 python -m benchmarks windows
    CEPPLAN_BENCH_WINDOWS=goog-143,band-700 python -m benchmarks windows

A row that stops at the budget says so (the error's figure); the Kleene rows over 15, 21
and 23 minutes (about 10, 14 and 16 MSFT events between the two GOOG, the last two past
`kleene_cap` 16) would write terabytes at 10^5 rows and run on the rows in `ROW_LIMITS`;
each prints its matches, output size and rate (GB/s over the run's wall time) and cap hits.
The table runs on one worker (`--workers 1`). Then the scaling curve: rows whose matching
outweighs reading, at 10^6 rows, on 1 and 2 workers: wall and CPU time, the ratio, and the match
files compared byte for byte (the machine's load printed beside: the ratio needs idle cores).

    CEPPLAN_BENCH_WINDOWS= CEPPLAN_BENCH_SCALING=goog-14 python -m benchmarks windows

The `seed004` row runs 100 patterns (3-5 stock types each, 15-minute windows, rates 2-47
events/s, selectivities 0.003-0.92; `benchmarks/seed004_workload.py`) on 10^6 synthetic events
(CEPPLAN_BENCH_SEED004_EVENTS; 5*10^4 with --quick): the shape as `cepplan stats` measures it,
planning time, then the plan and the trivial plan side by side, under a budget of its own
(CEPPLAN_BENCH_SEED004_BUDGET, default 1G: the engine holds the events within a margin of
several windows around the time range it matches, here the whole 10^6 with a boolean column per
pattern variable; its peak, about 0.75 GB).

    CEPPLAN_BENCH_WINDOWS=seed004 CEPPLAN_BENCH_SCALING= python -m benchmarks windows

The `ids-1000` row joins on a string id (`benchmarks/text_ids.py`: logins and payments of
5,000 users, a.user == b.user within 500 s, about 1,000 events per window), as many rows.

    CEPPLAN_BENCH_WINDOWS=ids-1000 CEPPLAN_BENCH_SCALING= python -m benchmarks windows
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_engine import ROOT, RSS_WRAPPER, children_cpu
from benchmarks.seed004_row import seed004_row
from benchmarks.stock_bars import workload, write_bars
from benchmarks.text_ids import plan_ids, write_ids

GOOG = ["a.peak < b.peak", "b.peak < c.peak"]
BAND = ["0 < c.volume - a.volume", "c.volume - a.volume < 3",
        "0 < b.volume - c.volume", "b.volume - c.volume < 3"]
ROWS = {  # name: (structure, conditions, window in minutes)
    "goog-3": (["SEQ", "a:GOOG", "b:GOOG", "c:GOOG"], GOOG, 3),
    "goog-14": (["SEQ", "a:GOOG", "b:GOOG", "c:GOOG"], GOOG, 14),
    "goog-50": (["SEQ", "a:GOOG", "b:GOOG", "c:GOOG"], GOOG, 50),
    "goog-143": (["SEQ", "a:GOOG", "b:GOOG", "c:GOOG"], GOOG, 143),
    "band-70": (["SEQ", "a:MSFT", "b:DRIV", "c:MSFT"], BAND, 70),
    "band-700": (["SEQ", "a:MSFT", "b:DRIV", "c:MSFT"], BAND, 700),
    "kleene-10": (["SEQ", "a:GOOG", ["KLEENE", "b:MSFT"], "c:GOOG"], ["a.peak < c.peak"], 10),
    "kleene-15": (["SEQ", "a:GOOG", ["KLEENE", "b:MSFT"], "c:GOOG"], ["a.peak < c.peak"], 15),
    "kleene-21": (["SEQ", "a:GOOG", ["KLEENE", "b:MSFT"], "c:GOOG"], ["a.peak < c.peak"], 21),
    "kleene-23": (["SEQ", "a:GOOG", ["KLEENE", "b:MSFT"], "c:GOOG"], ["a.peak < c.peak"], 23),
}


# rows whose output outgrows a disk, each held under about 15 GB (measured): kleene-15 writes
# 13.6 GB on 1,500 input rows (9 MB a row), kleene-21 13.8 GB on 270 (51 MB a row), kleene-23
# 14.7 GB on 255 (58 MB a row); the last two grow faster than the rows once past the window
ROW_LIMITS = {"kleene-15": 1_500, "kleene-21": 270, "kleene-23": 255}

IDS = "ids-1000"  # SEQ(a:Login, b:Pay), a.user == b.user, ~1,000 events a window (`text_ids`)
SCALING = ("goog-14", "band-70")  # rows whose matching outweighs reading


def plan_row(scratch: Path, name: str) -> Path:
    """The optimised plan of one row's pattern."""
    structure, where, window = ROWS[name]
    wl = workload([])
    wl["patterns"] = [{"name": "p", "structure": structure, "where": where, "within": window}]
    path = scratch / f"{name}.json"
    path.write_text(json.dumps(wl))
    plan = scratch / f"{name}.plan.json"
    subprocess.run([sys.executable, "-m", "cepplan", "optimize", str(path), "-o", str(plan),
                    "--quiet"], cwd=ROOT, check=True)
    return plan


def run_plan(plan: Path, bars: Path, out: Path, budget: str, workers: int,
             extra: tuple[str, ...] = ()) -> tuple[float, str, subprocess.CompletedProcess]:
    """`cepplan run` on `workers` processes (with `extra` options): wall seconds, peak memory
    (cepplan's own and its workers', from metrics.json when written), the finished process."""
    env = {**os.environ, "CEPPLAN_MATCH_MEMORY": budget}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RSS_WRAPPER, "run", str(plan), "--events",
                           str(bars), "--out", str(out), "--quiet", "--workers", str(workers),
                           *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    rss = [int(line.split()[1]) for line in done.stderr.splitlines()
           if line.startswith("maxrss ")]
    peak = f"{rss[-1] / 1024:,.0f} MB" if rss else "?"
    if not done.returncode:
        metrics = json.loads((out / "metrics.json").read_text())
        peak = f"{metrics['peak_memory_bytes'] / 2**20:,.0f} MB"
    return wall, peak, done


def run_row(scratch: Path, bars: Path, name: str, budget: str, workers: int = 1,
            plan: Path | None = None) -> str:
    """One row of the table: optimise the pattern (unless `plan` is given), run it, and
    describe the outcome."""
    out = scratch / f"{name}.out"
    plan = plan or plan_row(scratch, name)
    wall, peak, done = run_plan(plan, bars, out, budget, workers)
    if done.returncode:
        error = next((line for line in done.stderr.splitlines() if line.startswith("error")),
                     done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "")
        return f"{name:<10} {wall:7.1f} s {peak:>9}  failed (exit {done.returncode}): {error}"
    metrics = json.loads((out / "metrics.json").read_text())
    size = sum(f.stat().st_size for f in (out / "matches").iterdir())
    splits = metrics.get("chunk_splits", {}).get("p", "-")
    text = (f"{name:<10} {wall:7.1f} s {peak:>9}  {metrics['matches']['p']:>12,} matches "
            f"({size / 1e6:,.0f} MB, {size / 1e9 / wall:.2f} GB/s), {splits} splits, cap hits "
            f"{metrics['kleene_cap_hits']['p']}")
    subprocess.run(["rm", "-rf", str(out)], check=True)
    return text


def scaling_row(scratch: Path, bars: Path, name: str, budget: str,
                counts: tuple[int, ...] = (1, 2)) -> str:
    """One row's wall and CPU time (cepplan's and its workers') on each number of workers
    (`--workers`), the wall ratio to one worker, the match files (their parts concatenated in
    name order) checked byte for byte against one worker's."""
    plan = plan_row(scratch, name)
    walls, first = [], None
    for count in counts:
        out = scratch / f"{name}.w{count}"
        cpu = children_cpu()
        wall, peak, done = run_plan(plan, bars, out, budget, count)
        cpu = children_cpu() - cpu
        if done.returncode:
            return f"{name:<10} --workers {count} failed (exit {done.returncode})"
        files = b"".join(p.read_bytes() for p in sorted((out / "matches").iterdir()))
        first = files if first is None else first
        if files != first:
            return f"{name:<10} --workers {count}: DIFFERENT matches from --workers 1"
        used = json.loads((out / "metrics.json").read_text())["workers"]
        walls.append(f"{count} ({used} used): {wall:5.1f} s wall, {cpu:5.1f} s CPU, {peak}")
        subprocess.run(["rm", "-rf", str(out)], check=True)
        if count == counts[0]:
            base = wall
    return (f"{name:<10} " + "; ".join(walls) + f"; ratio {base / wall:.2f}x, same matches "
            f"byte for byte, load {os.getloadavg()[0]:.1f}")


def main(quick: bool = False) -> None:
    """The table's rows (environment: CEPPLAN_BENCH_ROWS, default 10^5, 10^4 with --quick;
    CEPPLAN_BENCH_WINDOWS, the rows to run, each on at most its ROW_LIMITS;
    CEPPLAN_BENCH_BUDGET, default 1G), then the
    scaling curve on 1 and 2 workers (CEPPLAN_BENCH_SCALING, the rows, default goog-14
    and band-70; CEPPLAN_BENCH_SCALING_ROWS, default 10^6 rows, 10^5 with --quick)."""
    rows = int(os.environ.get("CEPPLAN_BENCH_ROWS", 10_000 if quick else 100_000))
    names = [n for n in os.environ.get("CEPPLAN_BENCH_WINDOWS",
                                       ",".join([*ROWS, IDS, "seed004"]))
             .split(",") if n]
    budget = os.environ.get("CEPPLAN_BENCH_BUDGET", "1G")
    print(f"{rows:,} rows of minute bars, CEPPLAN_MATCH_MEMORY={budget}, load "
          "{:.1f}".format(os.getloadavg()[0]))
    print(f"{'row':<10} {'wall':>9} {'peak':>9}  outcome")
    with tempfile.TemporaryDirectory(prefix="bench-windows-") as name:
        scratch = Path(name)
        bars = scratch / "bars.txt"
        write_bars(bars, rows)
        for row in names:
            if row == "seed004":
                events = int(os.environ.get("CEPPLAN_BENCH_SEED004_EVENTS",
                                            50_000 if quick else 1_000_000))
                own = os.environ.get("CEPPLAN_BENCH_SEED004_BUDGET", "1G")
                print(f"\nseed004 (CEPPLAN_MATCH_MEMORY={own}): " + "\n  ".join(
                    seed004_row(scratch, events, own, run_plan)), flush=True)
                continue
            if row == IDS:  # a join on a string id, on events of its own
                ids = scratch / "ids.csv"
                write_ids(ids, rows)
                print(run_row(scratch, ids, row, budget, plan=plan_ids(scratch, ROOT)),
                      flush=True)
                continue
            if rows > ROW_LIMITS.get(row, rows):
                fewer = scratch / f"bars-{ROW_LIMITS[row]}.txt"
                write_bars(fewer, ROW_LIMITS[row])
                print(run_row(scratch, fewer, row, budget) + f" (on {ROW_LIMITS[row]:,} rows)",
                      flush=True)
                continue
            print(run_row(scratch, bars, row, budget), flush=True)
        scaled = [n for n in os.environ.get("CEPPLAN_BENCH_SCALING", ",".join(SCALING))
                  .split(",") if n]
        if not scaled:
            return
        many = int(os.environ.get("CEPPLAN_BENCH_SCALING_ROWS",
                                  100_000 if quick else 1_000_000))
        print(f"\nworkers: {many:,} rows, --workers 1 against 2 ({os.cpu_count()} cores), "
              f"load {os.getloadavg()[0]:.1f}")
        write_bars(bars, many)
        for row in scaled:
            print(scaling_row(scratch, bars, row, budget), flush=True)
