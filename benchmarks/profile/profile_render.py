"""The renderer alone, on the calls the engine makes: `python -m benchmarks.profile.profile_render
[--quick]` runs each plan of `bench_sharing_engine` once on its workloads (trading rules,
synthetic §6.1-like), keeps every `Renderer.match_array` call (table, event types, pool,
matches), then renders them again, with a fresh pool of event texts per pass (each event's
first rendering included) and each output dropped once hashed, as the writer frees written
chunks: the engine thread's CPU seconds of rendering a plan's matches, without the matching
around it (docs/matching.md, "Output cost").
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.bench_sharing_engine import RUNS, plans_and_jobs, workloads
from cepplan.engine_adapter.local import engine as local_engine
from cepplan.engine_adapter.runtime import records

PASSES = 3  # the least CPU of these is reported


def captured(job: dict, events: Path, out: Path) -> list[tuple[Any, ...]]:
    """Every `match_array` call of one engine run of `job`: (table, event types, the key of
    its pool's event texts or None, pattern, matches)."""
    calls: list[tuple[Any, ...]] = []
    original = records.Renderer.match_array

    def keep(renderer, spec, matches):
        rows = records.ROW_COLUMN in renderer.table.columns
        pool = (id(renderer._store), len(renderer._store.done)) if rows else None
        calls.append((renderer.table, renderer.type_attrs, pool, spec, matches))
        return original(renderer, spec, matches)

    records.Renderer.match_array = keep
    try:
        local_engine.run_local_job(job, [str(events)], out, say=lambda _: None)
    finally:
        records.Renderer.match_array = original
    return calls


def rendered(calls: list[tuple[Any, ...]]) -> tuple[float, str, int]:
    """Render `calls` again with fresh pools: CPU seconds of the renderer, sha256 of the
    lines, and their bytes."""
    pools: dict[tuple[int, int], records.EventTexts] = {}
    digest, seconds, size = hashlib.sha256(), 0.0, 0
    for table, types, pool, spec, matches in calls:
        texts = None if pool is None else pools.setdefault(pool, records.EventTexts(pool[1]))
        start = time.thread_time()
        lines = records.Renderer(table, types, texts).match_array(spec, matches)
        seconds += time.thread_time() - start
        for data in records.lines_data(lines):
            digest.update(data)
            size += data.size
        del lines
    return seconds, digest.hexdigest(), size


def rows(quick: bool) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(workload, plan, figures) for each plan of the first two workloads."""
    limit = 2.0 if quick else 10.0
    with tempfile.TemporaryDirectory() as tmp:
        for index, (title, wl, events) in enumerate(workloads(Path(tmp), quick)):
            if index == 2:  # the common prefix: few matches, rendering is not its cost
                return
            _, jobs = plans_and_jobs(wl, limit)
            for name in RUNS:
                calls = captured(jobs[name], events, Path(tmp) / "out")
                passes = [rendered(calls) for _ in range(PASSES)]
                matches = sum(c[4].count for c in calls)
                pieces = sum(c[4].count * (len(c[4].single) + len(c[4].kleene)) for c in calls)
                yield title, name, {"calls": len(calls), "matches": matches, "pieces": pieces,
                                    "bytes": passes[0][2], "sha256": passes[0][1],
                                    "seconds": min(p[0] for p in passes)}


def main(quick: bool = False) -> None:
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
    print(f"{'workload':>24} {'plan':>16} {'calls':>6} {'matches':>9} {'pieces':>10} "
          f"{'MB':>7} {'render s':>9} {'ns/piece':>8}  sha256")
    for title, name, row in rows(quick):
        print(f"{title[:24]:>24} {name:>16} {row['calls']:>6} {row['matches']:>9} "
              f"{row['pieces']:>10} {row['bytes'] / 1e6:>7.1f} {row['seconds']:>9.3f} "
              f"{row['seconds'] / max(1, row['pieces']) * 1e9:>8.1f}  {row['sha256'][:16]}")
    print(f"load at the end: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile.profile_render")
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    main(parser.parse_args().quick)
