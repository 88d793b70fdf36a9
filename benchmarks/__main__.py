"""Run every benchmark module `benchmarks/bench_*.py` (or those named) and print their tables.

    python -m benchmarks                 # all of them
    python -m benchmarks workload stats  # only bench_workload.py and bench_stats.py
    python -m benchmarks engine          # bench_engine.py and bench_engine_spark.py
    python -m benchmarks --quick         # smaller sizes, for a smoke run
    python -m benchmarks --report docs/benchmarks.md [--quick] [names...]
                                         # write their figures into one page

Each module exposes `main(quick: bool) -> None`, which measures its subject and the baseline
side by side in one run and prints the ratios.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import time
from pathlib import Path

from benchmarks import report


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("names", nargs="*", help="benchmark names (bench_NAME.py); default all")
    parser.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    parser.add_argument("--report", metavar="FILE",
                        help="write the figures, machine, date, load and commit into FILE")
    args = parser.parse_args()
    here = Path(__file__).parent
    found = sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(here)])
                   if m.name.startswith("bench_"))
    chosen = [f for f in found if not args.names
              or any(f == n or f.startswith(f"{n}_") for n in args.names)]  # engine: engine_*
    unknown = [n for n in args.names if not any(f == n or f.startswith(f"{n}_") for f in found)]
    if unknown:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; available: {found}")
    if args.report:
        machine, runs = report.this_machine(args.quick), []
        for name in chosen:
            print(f"running benchmark {name} ...", flush=True)
            runs.append(report.run_benchmark(name, args.quick))
        report.write_report(args.report, runs, machine, found)
        print(f"wrote {args.report}")
        return
    for name in chosen:
        print(f"\n=== benchmark: {name} ===", flush=True)
        start = time.perf_counter()
        importlib.import_module(f"benchmarks.bench_{name}").main(quick=args.quick)
        print(f"(benchmark {name} took {time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
