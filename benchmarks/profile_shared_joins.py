"""Shared against unshared evaluation of the same plan on the local engine, where the
partial matches are built: `python -m benchmarks.profile_shared_joins [--quick]` prints,
per plan of `bench_sharing_engine`'s trading-rules and synthetic workloads, the engine
thread's CPU seconds, the user part of them alone (the system part, page faults of the
output's buffers mostly, varies run to run for the same plan), and the rows the joins
build (every join step's rows before its conditions filter them, complete matches
included; docs/sharing.md, "Shared against unshared on the engine")."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from itertools import islice
from pathlib import Path

from benchmarks.bench_sharing_engine import plans_and_jobs, workloads
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime import matcher, shared_plan

RUNS = ("trivial", "re", "sh", "chosen unshared", "chosen")


class JoinRows:
    """Counts the rows every join step builds (`_extend` and `join_node` outputs)."""

    def __init__(self) -> None:
        self.rows = 0
        extend, join_node = matcher._Context._extend, shared_plan._SharedContext.join_node

        def counted_extend(context, rows, operand, *args):
            out = extend(context, rows, operand, *args)
            self.rows += len(out[operand.var])
            return out

        def counted_join_node(context, *args):
            out = join_node(context, *args)
            self.rows += len(next(iter(out.values()), ()))
            return out

        self._saved = [(matcher._Context, "_extend", extend),
                       (shared_plan._SharedContext, "join_node", join_node)]
        matcher._Context._extend = counted_extend
        shared_plan._SharedContext.join_node = counted_join_node

    def restore(self) -> None:
        for owner, name, original in self._saved:
            setattr(owner, name, original)


def _run(job: dict, events: Path, out: Path, counter: JoinRows) -> tuple[float, float, int]:
    """Engine thread CPU, its user part and the join rows of one run."""
    counter.rows = 0
    usage, clock = resource.getrusage(resource.RUSAGE_THREAD), time.thread_time()
    run_local_job(job, [str(events)], out, say=lambda _: None)
    user = resource.getrusage(resource.RUSAGE_THREAD).ru_utime - usage.ru_utime
    return time.thread_time() - clock, user, counter.rows


def main(quick: bool = False) -> None:
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    limit, repeats = (2.0, 1) if quick else (10.0, 5)
    counter = JoinRows()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for title, wl, events in islice(workloads(Path(tmp), quick), 2):
                _, jobs = plans_and_jobs(wl, limit)
                _run(jobs["trivial"], events, Path(tmp) / "out", counter)  # warm-up
                found: dict[str, list[tuple[float, float, int]]] = {n: [] for n in RUNS}
                for _ in range(repeats):  # interleaved: drift in load hits every plan alike
                    for name in RUNS:
                        found[name].append(_run(jobs[name], events, Path(tmp) / "out", counter))
                print(f"\n-- {title}: median of {repeats} interleaved runs per plan")
                print(f"{'plan':>16} {'engine CPU s':>12} {'user CPU s':>10} {'join rows':>10}")
                for name in RUNS:
                    runs = found[name]
                    print(f"{name:>16} {statistics.median(r[0] for r in runs):>12.3f} "
                          f"{statistics.median(r[1] for r in runs):>10.3f} {runs[-1][2]:>10}")
    finally:
        counter.restore()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_shared_joins")
    parser.add_argument("--quick", action="store_true", help="smaller workloads, one round")
    main(parser.parse_args().quick)
