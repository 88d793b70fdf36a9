"""Shared against unshared evaluation of the same plan on the local engine, where the
partial matches are built: `python -m benchmarks.profile.profile_shared_joins [--quick] [--prefix]`
prints, per plan of `bench_sharing_engine`'s workloads (trading rules, synthetic, and with
`--prefix` the 60 patterns on one common prefix), the engine thread's CPU seconds, the user
part of them alone (the system part, page faults of the output's buffers mostly, varies run
to run for the same plan), and the rows the joins build (every join step's rows before its
conditions filter them, complete matches included; docs/sharing.md, "What the
engines do with it"), and the patterns whose joins build the most rows more shared than
unshared (a shared node's rows are charged to the node, `<pattern>_shared<i>`)."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from itertools import islice
from pathlib import Path

from benchmarks.bench_sharing_engine import ThreadCPU, plans_and_jobs, workloads
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime import matcher, shared_plan

RUNS = ("trivial", "re", "sh", "chosen unshared", "chosen")


class JoinRows:
    """Counts the rows every join step builds (`_bind` and `join_node` outputs), in all
    and per pattern (or shared node) evaluated."""

    def __init__(self) -> None:
        self.rows = 0
        self.per_spec: dict[str, int] = {}
        bind, join_node = matcher.MatchContext._bind, shared_plan._SharedContext.join_node

        def counted_bind(context, rows, operand, *args):
            out = bind(context, rows, operand, *args)
            self._add(context.spec.name, len(out[operand.var]))
            return out

        def counted_join_node(context, *args):
            out = join_node(context, *args)
            self._add(context.spec.name, len(next(iter(out.values()), ())))
            return out

        self._saved = [(matcher.MatchContext, "_bind", bind),
                       (shared_plan._SharedContext, "join_node", join_node)]
        matcher.MatchContext._bind = counted_bind
        shared_plan._SharedContext.join_node = counted_join_node

    def _add(self, name: str, rows: int) -> None:
        self.rows += rows
        self.per_spec[name] = self.per_spec.get(name, 0) + rows

    def restore(self) -> None:
        for owner, name, original in self._saved:
            setattr(owner, name, original)


def _run(job: dict, events: Path, out: Path, counter: JoinRows) -> tuple[float, float, int]:
    """Engine thread CPU, its user part and the join rows of one run."""
    counter.rows = 0
    counter.per_spec = {}
    clock = time.thread_time()
    with ThreadCPU() as usage:
        run_local_job(job, [str(events)], out, say=lambda _: None)
    return time.thread_time() - clock, usage.seconds["engine user"], counter.rows


def main(quick: bool = False, prefix: bool = False) -> None:
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    limit, repeats = (2.0, 1) if quick else (10.0, 5)
    counter = JoinRows()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for title, wl, events in islice(workloads(Path(tmp), quick), 3 if prefix else 2):
                _, jobs = plans_and_jobs(wl, limit)
                _run(jobs["trivial"], events, Path(tmp) / "out", counter)  # warm-up
                found: dict[str, list[tuple[float, float, int]]] = {n: [] for n in RUNS}
                per_spec: dict[str, dict[str, int]] = {}
                for _ in range(repeats):  # interleaved: drift in load hits every plan alike
                    for name in RUNS:
                        found[name].append(_run(jobs[name], events, Path(tmp) / "out", counter))
                        per_spec[name] = counter.per_spec
                print(f"\n-- {title}: median of {repeats} interleaved runs per plan")
                print(f"{'plan':>16} {'engine CPU s':>12} {'user CPU s':>10} {'join rows':>10}")
                for name in RUNS:
                    runs = found[name]
                    print(f"{name:>16} {statistics.median(r[0] for r in runs):>12.3f} "
                          f"{statistics.median(r[1] for r in runs):>10.3f} {runs[-1][2]:>10}")
                _print_worst(per_spec["chosen unshared"], per_spec["chosen"])
    finally:
        counter.restore()


def _print_worst(unshared: dict[str, int], shared: dict[str, int], top: int = 5) -> None:
    """The chosen plan's patterns whose own joins build the most rows more shared than
    unshared (a user's rows on top of its nodes; the nodes' rows are counted apart)."""
    nodes = sum(v for k, v in shared.items() if "_shared" in k)
    more = sorted(((shared.get(k, 0) - v, k) for k, v in unshared.items()), reverse=True)
    print(f"chosen: {nodes} rows in shared nodes; most rows more shared than unshared: " +
          ", ".join(f"{k} {shared.get(k, 0)} vs {unshared[k]}" for d, k in more[:top] if d > 0))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile.profile_shared_joins")
    parser.add_argument("--quick", action="store_true", help="smaller workloads, one round")
    parser.add_argument("--prefix", action="store_true",
                        help="also the 60 patterns on one common prefix")
    arguments = parser.parse_args()
    main(arguments.quick, arguments.prefix)
