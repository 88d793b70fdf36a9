"""The 100-pattern row of the windows benchmark: the workload of `seed004_workload` (SEQ/AND of
3-5 stock types, 15-minute windows, rates 2-47 events/s, selectivities 0.003-0.92), its events
from `cepplan synth` at exactly those rates, measured by `cepplan stats`, planned by
`cepplan optimize` and run by `cepplan run` with the plan and with the trivial plan."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.bench_engine import ROOT, children_cpu
from benchmarks.seed004_workload import KEYS, expected_matches, seed004_workload

CLI = [sys.executable, "-m", "cepplan"]


def write_events(scratch: Path, events: int, seed: int = 4) -> tuple[Path, Path, dict]:
    """The workload file, about `events` events at its rates (`cepplan synth`), the doc."""
    doc = seed004_workload(seed=seed)
    workload = scratch / "seed004.json"
    workload.write_text(json.dumps(doc))
    rates = doc["statistics"]["rates"]
    fixed = [arg for t, r in rates.items() for arg in ("--rate", f"{t}={r}")]
    path = scratch / "seed004.csv"
    subprocess.run([*CLI, "synth", str(workload), "-o", str(path), "--seed", str(seed),
                    "--duration", f"{events / sum(rates.values()):.3f}", "--keys", str(KEYS),
                    "--truth-draws", "20000", "--quiet", *fixed], cwd=ROOT, check=True)
    return workload, path, doc


def measured(workload: Path, events: Path, scratch: Path) -> dict:
    """`cepplan stats` of the events: rates and selectivities as a user would measure them."""
    out = scratch / "seed004.stats.json"
    subprocess.run([*CLI, "stats", str(events), "-w", str(workload), "-o", str(out),
                    "--quiet"], cwd=ROOT, check=True)
    return json.loads(out.read_text())


def seed004_row(scratch: Path, events: int, budget: str, run_plan: Callable) -> list[str]:
    """The row's lines: the workload's shape as measured, planning time, and the plan against
    the trivial plan on the same events (wall, CPU, peak memory, matches, throughput)."""
    workload, path, doc = write_events(scratch, events)
    stats = measured(workload, path, scratch)
    sizes = [len(p["structure"]) - 1 for p in doc["patterns"]]
    rates = stats["rates"].values()
    sels = [s for p in stats["selectivities"].values() for s in p.values()]
    rows = sum(1 for _ in path.open()) - 1
    span = rows / sum(doc["statistics"]["rates"].values())
    lines = [f"{rows:,} events over {span:,.0f} s, {len(doc['event_types'])} types, "
             f"{len(sizes)} patterns of {min(sizes)}-{max(sizes)} events (average "
             f"{sum(sizes) / len(sizes):.1f}), 15-minute windows, events of a match share "
             f"one of {KEYS} keys",
             f"measured: rates {min(rates):.2f}-{max(rates):.2f} events/s per type, "
             f"selectivities {min(sels):.4f}-{max(sels):.2f} ({len(sels)} predicates); "
             f"expected matches {sum(expected_matches(doc, span).values()):,.1f}"]
    plan = scratch / "seed004.plan.json"
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run([*CLI, "optimize", str(workload), "-o", str(plan), "--quiet"], cwd=ROOT,
                   check=True)
    lines.append(f"planning: {time.perf_counter() - start:.1f} s wall, "
                 f"{children_cpu() - cpu:.1f} s CPU")
    runs = {}
    for kind in ("plan", "trivial"):
        out = scratch / f"seed004.{kind}.out"
        cpu = children_cpu()
        wall, peak, done = run_plan(plan, path, out, budget, 1, ("--plan-kind", kind))
        cpu = children_cpu() - cpu
        if done.returncode:
            error = next((x for x in done.stderr.splitlines() if x.startswith("error")), "")
            lines.append(f"{kind:<8} failed (exit {done.returncode}) after {wall:.1f} s: "
                         f"{error}")
            return lines
        matches = json.loads((out / "metrics.json").read_text())["matches"]
        runs[kind] = (wall, cpu, sum(matches.values()))
        lines.append(f"{kind:<8} {wall:7.1f} s wall {cpu:7.1f} s CPU {peak:>9} peak  "
                     f"{runs[kind][2]:>8,} matches  {rows / wall:>9,.0f} events/s "
                     f"({rows / cpu:,.0f} per CPU second)")
        subprocess.run(["rm", "-rf", str(out)], check=True)
    same = "same matches" if runs["plan"][2] == runs["trivial"][2] else "DIFFERENT matches"
    lines.append(f"plan against trivial: wall {runs['trivial'][0] / runs['plan'][0]:.2f}x, "
                 f"CPU {runs['trivial'][1] / runs['plan'][1]:.2f}x, {same}")
    return lines
