"""Engine benchmarks with the in-process engine, end to end as a user runs it
(`python -m cepplan run ...`, process start to files written; side by side in one run):

a. cepplan vs OpenCEP (OPENCEP_SRC; skipped, saying so, when unset) on SEQ of three GOOG bars
   with rising peaks within 3 min and SEQ(MSFT, DRIV, MSFT) with a.peak < c.peak and
   b.volume > 1000 within 10 min, over synthetic minute bars in OpenCEP's NASDAQ format:
   identical matches at the size OpenCEP runs, throughput ratio (target >= 20x) with cepplan
   at 10^6 rows;
b. the fraud walk-through `run` on the bundled 7,851 events (target < 2 s);
c. optimised vs trivial plan on the fraud workload at 10^6 events: wall time and rows to
   matchers next to the planner's predicted ratio (target: faster, within 10 %);
d. 100 patterns over one file vs one (target <= 10x);
e. peak memory (max RSS of the run's process) at 10^6 rows, and at 10^7 with
   CEPPLAN_BENCH_10M=1 (expensive: a 0.5 GB file).
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.stock_bars import PATTERNS, TICKERS, workload, write_bars, write_workload
from cepplan.workload import load_workload

ROOT = Path(__file__).resolve().parent.parent
CPU: list[float] = []
CLI = [sys.executable, "-m", "cepplan"]
REPEAT = int(os.environ.get("CEPPLAN_BENCH_REPEAT", 3))
# Runs a command as `python -m cepplan`, then prints its own peak RSS (KiB) on stderr: the
# high-water mark of its own memory (VmHWM). Not ru_maxrss: Linux carries into it the RSS the
# process had before exec, i.e. this benchmark's own (hundreds of MB after writing the files).
RSS_WRAPPER = ("import atexit, resource, runpy, sys\n"
               "def peak():\n"
               "    try:\n"
               "        with open('/proc/self/status') as status:\n"
               "            return next(int(line.split()[1]) for line in status\n"
               "                        if line.startswith('VmHWM:'))\n"
               "    except OSError:\n"
               "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
               "atexit.register(lambda: print('maxrss', peak(), file=sys.stderr))\n"
               "sys.argv = ['cepplan', *sys.argv[1:]]\n"
               "runpy.run_module('cepplan', run_name='__main__')\n")


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cepplan(*args: str) -> tuple[float, int]:
    """Wall seconds of one `python -m cepplan ...` process and its peak RSS in KiB; its CPU
    seconds go to `CPU[-1]` (the machine is shared: CPU time is the load-robust figure)."""
    start, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *args], cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    CPU.append(children_cpu() - cpu)
    if done.returncode:
        raise RuntimeError(f"cepplan {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    rss = [int(line.split()[1]) for line in done.stderr.splitlines()
           if line.startswith("maxrss ")]
    return wall, rss[-1] if rss else 0


def run_local(plan: Path, events: Path, out: Path, *extra: str) -> tuple[float, int, dict]:
    wall, rss = cepplan("run", str(plan), "--events", str(events), "--out", str(out),
                        "--engine", "local", "--quiet", *extra)
    return wall, rss, json.loads((out / "metrics.json").read_text())


def match_ids(out: Path) -> list[tuple[int, ...]]:
    """Each match as the sorted ids (row positions) of its events."""
    found = []
    for part in sorted((out / "matches").glob("part-*")):
        for line in part.read_text().splitlines():
            events = json.loads(line)["events"].values()
            found.append(tuple(sorted(e["id"] for e in events)))
    return sorted(found)


def planned(scratch: Path, name: str, patterns: list[str]) -> Path:
    wl, plan = scratch / f"{name}.workload.json", scratch / f"{name}.plan.json"
    write_workload(wl, patterns)
    cepplan("optimize", str(wl), "-o", str(plan), "--quiet")
    return plan


def versus_opencep(scratch: Path, bars: Path, rows: int, peer_rows: int) -> None:
    source = os.environ.get("OPENCEP_SRC")
    print(f"\na. cepplan (local engine, {rows:,} rows) vs OpenCEP ({peer_rows:,} rows), "
          "throughput end to end")
    if not source:
        print("   skipped: set OPENCEP_SRC to an OpenCEP checkout to compare with it")
    small = scratch / "bars-peer.txt"
    write_bars(small, peer_rows)
    print(f"{'pattern':<8} {'matches (peer size)':>20} {'same':>5} {'OpenCEP s':>10} "
          f"{'cpu s':>6} {'cepplan s':>10} {'cpu s':>6} {'ratio (wall)':>13} {'ratio (cpu)':>12}")
    for name in PATTERNS:
        plan = planned(scratch, name, [name])
        wall, _, metrics = run_local(plan, bars, scratch / f"{name}-out")
        cpu = CPU[-1]
        peer_wall = peer_cpu = float("nan")
        same, count = "-", metrics["matches"][name]
        if source:
            _, _, small_metrics = run_local(plan, small, scratch / f"{name}-small")
            result = scratch / f"{name}-opencep.json"
            start, before = time.perf_counter(), children_cpu()
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "opencep_stocks.py"),
                            source, name, str(small), str(result)], check=True, cwd=source)
            peer_wall, peer_cpu = time.perf_counter() - start, children_cpu() - before
            theirs = sorted(tuple(m) for m in json.loads(result.read_text())["matches"])
            same = "yes" if theirs == match_ids(scratch / f"{name}-small") else "NO"
            count = small_metrics["matches"][name]
        by_wall = (rows / wall) / (peer_rows / peer_wall)
        by_cpu = (rows / cpu) / (peer_rows / peer_cpu)
        print(f"{name:<8} {count:>20,} {same:>5} {peer_wall:>10.1f} {peer_cpu:>6.1f} "
              f"{wall:>10.1f} {cpu:>6.1f} {by_wall:>12.1f}x {by_cpu:>11.1f}x")
    print("   (throughput ratio = cepplan rows per second / OpenCEP rows per second)")


def fraud_walkthrough(scratch: Path) -> None:
    example = ROOT / "examples" / "fraud"
    plan = scratch / "fraud.plan.json"
    cepplan("optimize", str(example / "workload.json"), "-o", str(plan), "--quiet")
    wall, _, metrics = run_local(plan, example / "events.csv", scratch / "fraud-out")
    print(f"\nb. fraud walk-through `run` on the bundled {metrics['rows_read']:,} events: "
          f"{wall:.2f} s wall, {CPU[-1]:.2f} s CPU (target < 2 s)")


def fraud_plans(scratch: Path, events_wanted: int) -> None:
    example = ROOT / "examples" / "fraud" / "workload.json"
    loaded = load_workload(example)
    duration = events_wanted / sum(loaded.statistics.rates.values())
    events = scratch / "fraud-events.csv"
    rates = [f"--rate={t}={r}" for t, r in loaded.statistics.rates.items()]
    cepplan("synth", str(example), "-o", str(events), "--duration", f"{duration:.0f}",
            "--seed", "7", "--truth-draws", "20000", "--range", "amount=0:1500", *rates, "-q")
    plan = scratch / "fraud-big.plan.json"
    cepplan("optimize", str(example), "--stats", str(scratch / "fraud-events.truth.json"),
            "-o", str(plan), "--quiet")
    runs: dict[str, list[tuple[float, float, dict]]] = {"trivial": [], "optimised": []}
    for _ in range(REPEAT):  # alternated, so that load changes hit both plans alike
        for kind, extra in (("trivial", ("--plan-kind", "trivial")), ("optimised", ())):
            wall, _, metrics = run_local(plan, events, scratch / f"fraud-{kind}", *extra)
            runs[kind].append((wall, CPU[-1], metrics))
    (wall_t, cpu_t, trivial), (wall_o, cpu_o, opt) = (_medians(runs[k])
                                                      for k in ("trivial", "optimised"))
    assert opt["matches"] == trivial["matches"], "plans must not change results"
    predicted = opt["plan"]["predicted"].values()
    ratio_model = (sum(p["expected_cost"] or 0 for p in predicted)
                   / sum(p["naive_cost"] or 0 for p in predicted))
    rows_t, rows_o = trivial["rows_to_matchers"], opt["rows_to_matchers"]
    print(f"\nc. fraud, {opt['rows_read']:,} events: optimised vs trivial plan (local engine), "
          f"medians of {REPEAT} alternated runs each")
    print(f"{'':<22} {'trivial':>12} {'optimised':>12} {'ratio':>8}")
    print(f"{'rows to matchers':<22} {rows_t:>12,} {rows_o:>12,} {rows_o / rows_t:>8.3f}")
    print(f"{'model cost':<22} {'':>12} {'':>12} {ratio_model:>8.3f}   (planner's prediction)")
    print(f"{'wall seconds':<22} {wall_t:>12.2f} {wall_o:>12.2f} {wall_o / wall_t:>8.3f}")
    print(f"{'CPU seconds':<22} {cpu_t:>12.2f} {cpu_o:>12.2f} {cpu_o / cpu_t:>8.3f}")
    for stage in trivial["seconds"]:
        print(f"  {stage:<30} {trivial['seconds'][stage]:>12.2f} "
              f"{opt['seconds'].get(stage, 0):>12.2f}")


def _medians(runs: list[tuple[float, float, dict]]) -> tuple[float, float, dict]:
    """Median wall and CPU seconds of repeated runs, and the metrics of the first with its
    stage seconds replaced by their medians."""
    metrics = dict(runs[0][2])
    metrics["seconds"] = {stage: statistics.median(r[2]["seconds"][stage] for r in runs)
                          for stage in metrics["seconds"]}
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            metrics)


def many_patterns(scratch: Path, bars: Path, rows: int) -> None:
    patterns = []
    pairs = [(a, b) for a in TICKERS for b in TICKERS if a != b]
    for i in range(100):
        first, second = pairs[i % len(pairs)]
        patterns.append({"name": f"p{i:03d}", "structure": ["SEQ", f"a:{first}", f"b:{second}"],
                         "where": ["a.volume > 9000", "b.volume > 9000", "a.peak < b.peak"],
                         "within": 1 + i // len(pairs) * 4})
    walls = {}
    for count in (1, 100):
        spec = workload([])
        spec["patterns"] = patterns[:count]
        wl, plan = scratch / f"many{count}.workload.json", scratch / f"many{count}.plan.json"
        wl.write_text(json.dumps(spec))
        cepplan("optimize", str(wl), "-o", str(plan), "--quiet")
        walls[count], _, metrics = run_local(plan, bars, scratch / f"many{count}-out")
        walls[count, "cpu"] = CPU[-1]
        walls[count, "matches"] = sum(metrics["matches"].values())
    print(f"\nd. {rows:,} rows: 1 pattern {walls[1]:.1f} s wall / {walls[1, 'cpu']:.1f} s CPU "
          f"({walls[1, 'matches']:,} matches), 100 patterns {walls[100]:.1f} s / "
          f"{walls[100, 'cpu']:.1f} s CPU ({walls[100, 'matches']:,} matches): "
          f"{walls[100] / walls[1]:.1f}x wall, {walls[100, 'cpu'] / walls[1, 'cpu']:.1f}x CPU "
          "(target <= 10x)")


def memory(scratch: Path, bars: Path, rows: int) -> None:
    plan = planned(scratch, "goog-mem", ["goog"])
    sizes = [(rows, bars)]
    if os.environ.get("CEPPLAN_BENCH_10M") == "1":
        big = scratch / "bars-10m.txt"
        write_bars(big, 10 * rows)
        sizes.append((10 * rows, big))
    else:
        print("\n(e at 10x the rows skipped: set CEPPLAN_BENCH_10M=1)")
    print("\ne. peak memory of `cepplan run --engine local` (GOOG pattern)")
    print(f"{'rows':>12} {'file MiB':>9} {'wall s':>8} {'cpu s':>6} {'peak RSS MiB':>13} "
          f"{'rows to matchers':>17}")
    for count, path in sizes:
        wall, rss, metrics = run_local(plan, path, scratch / f"mem-{count}")
        print(f"{count:>12,} {path.stat().st_size / 2**20:>9.0f} {wall:>8.1f} {CPU[-1]:>6.1f} "
              f"{rss / 1024:>13.0f} {metrics['rows_to_matchers']:>17,}")
        if path != bars:
            path.unlink()


def main(quick: bool = False) -> None:
    """All measurements (smaller with --quick). Environment: CEPPLAN_BENCH_ROWS (cepplan's
    size, default 10^6), CEPPLAN_BENCH_PEER_ROWS (OpenCEP's, default 10^5),
    CEPPLAN_BENCH_ONLY (some of a,b,c,d,e), CEPPLAN_BENCH_REPEAT (runs per plan in c)."""
    rows = int(os.environ.get("CEPPLAN_BENCH_ROWS", 100_000 if quick else 1_000_000))
    peer_rows = int(os.environ.get("CEPPLAN_BENCH_PEER_ROWS", 10_000 if quick else 100_000))
    only = set(os.environ.get("CEPPLAN_BENCH_ONLY", "abcde").replace(",", ""))
    print(f"load: {_load()} ({os.cpu_count()} cores)")
    if sys.dont_write_bytecode:  # as installing the package does; else every run compiles
        compileall.compile_dir(ROOT / "cepplan", quiet=1)
        print("(PYTHONDONTWRITEBYTECODE is set: cepplan's modules compiled to bytecode first, "
              "as `pip install` does)")
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as name:
        scratch = Path(name)
        bars = scratch / "bars.txt"
        if only & set("ade"):
            write_bars(bars, rows)
        if "a" in only:
            versus_opencep(scratch, bars, rows, peer_rows)
        if "b" in only:
            fraud_walkthrough(scratch)
        if "c" in only:
            fraud_plans(scratch, rows)
        if "d" in only:
            many_patterns(scratch, bars, rows)
        if "e" in only:
            memory(scratch, bars, rows)
    print(f"load: {_load()}")


def _load() -> str:
    """The load averages over 1, 5 and 15 minutes, as `uptime` shows them."""
    return "{:.2f}, {:.2f}, {:.2f} (1, 5, 15 minutes)".format(*os.getloadavg())
