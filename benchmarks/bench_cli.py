"""Start-up time of the `cepplan` command: `--help`, `validate` and `show` (target < 0.5 s each)
beside the bare interpreter and an import of the heavy packages the CLI no longer loads at start.

Each command runs as a fresh process, as a user types it; the median of several runs is shown.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = str(ROOT / "examples" / "fraud" / "workload.json")
TARGET = 0.5
CASES = (
    ("python -c pass (baseline)", ["-c", "pass"]),
    ("import pandas, pyspark (what start-up used to load)", ["-c", "import pandas, pyspark"]),
    ("cepplan --help", ["-m", "cepplan", "--help"]),
    ("cepplan validate fraud", ["-m", "cepplan", "validate", WORKLOAD]),
    ("cepplan show fraud", ["-m", "cepplan", "show", WORKLOAD]),
    ("cepplan optimize --help", ["-m", "cepplan", "optimize", "--help"]),
)


def _seconds(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return time.perf_counter() - start


def main(quick: bool = False) -> None:
    rounds = 3 if quick else 7
    print(f"load average: {os.getloadavg()[0]:.2f}; median of {rounds} runs each")
    print(f"{'command':<52} {'seconds':>8} {'- python':>9}  target")
    baseline = 0.0
    for name, args in CASES:
        _seconds(args)  # warm the file cache
        median = statistics.median(_seconds(args) for _ in range(rounds))
        baseline = baseline or median
        verdict = ""
        if args[:2] == ["-m", "cepplan"] and args[2] in ("--help", "validate", "show"):
            verdict = "met" if median < TARGET else "MISSED"
        print(f"{name:<52} {median:>8.3f} {median - baseline:>9.3f}  {verdict}")
