"""Selection strategies on the engine benchmark's patterns (`stock_bars`: SEQ of three GOOG
bars with rising peaks within 3 min, SEQ(MSFT, DRIV, MSFT) within 10 min) and a Kleene one
(MSFT, then GOOG bars with rising peaks, then MSFT, within 5 min), each planned and run
with `strategy` any, next (not with KLEENE) and strict by the in-process engine (`python -m
cepplan run`, process start to files written), side by side in one run: matches, rows to
matchers, wall and CPU seconds, and throughput relative to `any` (target: next and strict
at least 1x).

    python -m benchmarks language            # 10^6 rows (--quick: 10^5)
    CEPPLAN_BENCH_ROWS=200000 python -m benchmarks language
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from benchmarks.bench_engine import CPU, cepplan, run_local
from benchmarks.stock_bars import PATTERNS, workload, write_bars

STRATEGIES = ("any", "next", "strict")
KLEENE_PATTERN = {"name": "goog_run",
                  "structure": ["SEQ", "a:MSFT", ["KLEENE", "b:GOOG"], "c:MSFT"],
                  "where": ["b.peak > PREV(b.peak)", "c.peak > a.peak"], "within": 5}


def measure(scratch: Path, bars: Path, name: str, strategy: str) -> tuple[float, float, dict]:
    """(wall s, CPU s, metrics) of planning and running one pattern under one strategy."""
    doc = workload([name] if name in PATTERNS else [])
    doc["patterns"] = [{**(PATTERNS.get(name) or KLEENE_PATTERN), "strategy": strategy}]
    wl, plan = scratch / f"{name}-{strategy}.json", scratch / f"{name}-{strategy}.plan.json"
    wl.write_text(json.dumps(doc))
    cepplan("optimize", str(wl), "-o", str(plan), "--quiet")
    wall, _, metrics = run_local(plan, bars, scratch / f"{name}-{strategy}-out")
    return wall, CPU[-1], metrics


def main(quick: bool = False) -> None:
    rows = int(os.environ.get("CEPPLAN_BENCH_ROWS", 100_000 if quick else 1_000_000))
    print(f"selection strategies, in-process engine, {rows:,} minute bars "
          "(seq_ties: allow, as the engine benchmark)")
    print(f"{'pattern':<8} {'strategy':<8} {'matches':>9} {'rows in':>9} {'wall s':>7} "
          f"{'cpu s':>6} {'vs any (wall)':>14} {'vs any (cpu)':>13}")
    with tempfile.TemporaryDirectory(prefix="bench-language-") as name:
        scratch = Path(name)
        bars = scratch / "bars.txt"
        write_bars(bars, rows)
        for pattern in (*PATTERNS, KLEENE_PATTERN["name"]):
            base = None
            for strategy in STRATEGIES if pattern in PATTERNS else ("any", "strict"):
                wall, cpu, metrics = measure(scratch, bars, pattern, strategy)
                base = base or (wall, cpu)
                print(f"{pattern:<8} {strategy:<8} {metrics['matches'][pattern]:>9,} "
                      f"{metrics['rows_to_matchers']:>9,} {wall:>7.2f} {cpu:>6.2f} "
                      f"{base[0] / wall:>13.2f}x {base[1] / cpu:>12.2f}x")
    print("   (vs any = throughput under the strategy / throughput under any; > 1x is faster)")
