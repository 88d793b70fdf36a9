"""Where the local engine's wall time goes, per plan, on the three workloads of
`bench_sharing_engine` (trading rules, synthetic §6.1-like, one common prefix):
`python -m benchmarks.profile.profile_sharing_engine [--quick]` prints, per plan, the engine
thread's CPU seconds of read, tag, acquisition, event tables and candidates, joins, Kleene
expansion, negation, rendering, writing and the rest, each charged exclusively (a call's time
less the timed calls inside it), so they add up to the engine thread's CPU time (CPU, not
wall: the machine is shared, and other processes' load would land in whichever phase was
running). The match writer's thread (the kernel copying the output into the page cache) is
its own column: charged to the phases, it made rendering look 0.5-1.5 s for the same matches.
Below each plan's row, the system part of each phase's CPU and its minor page faults (the
engine thread's `getrusage(RUSAGE_THREAD)`): where the output's buffers fault
(docs/matching.md, "Output cost").
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_sharing_engine import RUNS, plans_and_jobs, workloads
from cepplan.engine_adapter.local import engine as local_engine
from cepplan.engine_adapter.local import shared as local_shared
from cepplan.engine_adapter.local import writer as local_writer
from cepplan.engine_adapter.runtime import job as runtime_job
from cepplan.engine_adapter.runtime import matcher, records, shared_plan

PHASES = ("read", "tag", "acquire", "table", "join", "kleene", "negation", "render", "write",
          "complex")


class PhaseClock:
    """Exclusive CPU seconds of the calling thread per phase (`time.thread_time`, exact),
    their system part (`getrusage`, which the kernel may sample per tick: read it over many
    calls, not one) and the minor page faults: entering a timed call charges the usage so
    far to the phase it interrupts."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.system = dict.fromkeys(PHASES, 0.0)
        self.faults = dict.fromkeys(PHASES, 0)
        self._stack: list[str] = []
        self._mark = (time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD))

    def _switch(self) -> None:
        now = (time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD))
        if self._stack:
            phase, (clock, usage) = self._stack[-1], self._mark
            self.seconds[phase] += now[0] - clock
            self.system[phase] += now[1].ru_stime - usage.ru_stime
            self.faults[phase] += now[1].ru_minflt - usage.ru_minflt
        self._mark = now

    def timed(self, phase: str, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self._switch()
            self._stack.append(phase)
            try:
                return func(*args, **kwargs)
            finally:
                self._switch()
                self._stack.pop()
        return wrapper

    def timed_iter(self, phase: str, func: Callable) -> Callable:
        """As `timed`, for a generator function: each step of the iteration is timed."""
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            steps = iter(func(*args, **kwargs))
            while True:
                self._switch()
                self._stack.append(phase)
                try:
                    item = next(steps)
                except StopIteration:
                    return
                finally:
                    self._switch()
                    self._stack.pop()
                yield item
        return wrapper


def _instrument(clock: PhaseClock) -> list[tuple[object, str, object]]:
    """Wrap the engine's phase functions; returns what to restore."""
    targets = [
        (local_engine, "tagged_rows", "tag"), (local_engine, "acquire", "acquire"),
        (local_shared, "acquire", "acquire"), (local_engine, "acquire_in_range", "acquire"),
        (local_shared, "acquire_in_range", "acquire"),
        (runtime_job, "make_table", "table"), (shared_plan, "make_table", "table"),
        (matcher.MatchContext, "_candidates", "table"),
        (shared_plan._SharedContext, "_candidates", "table"),
        (matcher.MatchContext, "join", "join"), (shared_plan._SharedContext, "join", "join"),
        (matcher.MatchContext, "kleene", "kleene"), (matcher.MatchContext, "negation", "negation"),
        (records.Renderer, "match_array", "render"), (records.Renderer, "match_lines", "render"),
        (records, "lines_text", "render"),
        (local_writer.MatchWriter, "write", "write"),
        (runtime_job, "complex_events", "complex"),
    ]
    saved = [(local_engine, "read_batches", local_engine.read_batches)]
    local_engine.read_batches = clock.timed_iter("read", local_engine.read_batches)
    for owner, name, phase in targets:
        if name not in vars(owner):
            continue
        original = vars(owner)[name]
        saved.append((owner, name, original))
        setattr(owner, name, clock.timed(phase, original))
    return saved


def profile_run(job: dict, events: Path, out: Path) -> dict[str, Any]:
    """One engine run of `job`: wall seconds, the process's and the engine thread's CPU
    seconds, the exclusive CPU seconds of every phase (`other`: what no phase accounts
    for) and the other threads' (`writer`: the match writer's); under `system` and
    `faults`, per phase the system part and the minor page faults."""
    clock = PhaseClock()
    saved = _instrument(clock)
    try:
        start, cpu, main = time.perf_counter(), time.process_time(), time.thread_time()
        usage = resource.getrusage(resource.RUSAGE_THREAD)
        local_engine.run_local_job(job, [str(events)], out, say=lambda _: None)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        main = time.thread_time() - main
        end = resource.getrusage(resource.RUSAGE_THREAD)
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)
    row: dict[str, Any] = {"wall": wall, "cpu": cpu, "engine": main, **clock.seconds}
    row["other"] = main - sum(clock.seconds.values())
    row["writer"] = cpu - main
    row["system"] = {**clock.system, "engine": end.ru_stime - usage.ru_stime,
                     "other": (end.ru_stime - usage.ru_stime) - sum(clock.system.values())}
    row["faults"] = {**clock.faults, "engine": end.ru_minflt - usage.ru_minflt,
                     "other": (end.ru_minflt - usage.ru_minflt) - sum(clock.faults.values())}
    return row


def main(quick: bool = False) -> None:
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
    limit = 2.0 if quick else 10.0
    columns = ("wall", "cpu", "engine", *PHASES, "other", "writer")
    with tempfile.TemporaryDirectory() as tmp:
        for title, wl, events in workloads(Path(tmp), quick):
            _, jobs = plans_and_jobs(wl, limit)
            print(f"\n-- {title}: the engine thread's exclusive CPU seconds per phase, and "
                  "the writer thread's (run of least engine CPU of 2)")
            print(f"{'plan':>16} " + " ".join(f"{c:>8}" for c in columns))
            for name in RUNS:
                rows = [profile_run(jobs[name], events, Path(tmp) / "out") for _ in range(2)]
                best = min(rows, key=lambda r: r["engine"])
                print(f"{name:>16} " + " ".join(f"{best[c]:>8.3f}" for c in columns))
                print(f"{'  of it system':>16} " + " ".join(
                    f"{best['system'][c]:>8.3f}" if c in best["system"] else f"{'':>8}"
                    for c in columns))
                print(f"{'  minor faults':>16} " + " ".join(
                    f"{best['faults'][c]:>8d}" if c in best["faults"] else f"{'':>8}"
                    for c in columns))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile.profile_sharing_engine")
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    main(parser.parse_args().quick)
