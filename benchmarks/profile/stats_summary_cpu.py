"""CPU time of the statistics' driver-side summary (`collect_statistics` once the scans have
returned: shared by both engines), replayed on saved scan tables so that the machine's load
hardly matters: the in-process engine's two tables for the benchmark file are captured once,
then `collect_statistics` runs on a scan that returns them, warm, best of five.

    python -m benchmarks.profile.stats_summary_cpu [EVENTS ...]   # default 1000000 10000000

The files are those of `bench_stats` (generated there when missing).
"""

from __future__ import annotations

import os
import sys
import time

from benchmarks.bench_stats import WORKLOAD, _events_file
from cepplan.stats.collect import collect_statistics, scan_columns
from cepplan.stats.local_scan import LocalScan
from cepplan.workload import build_workload

RUNS = 5


class _Replay:
    """A scan that returns the tables another scan returned."""

    engine = "local"

    def __init__(self, steps, groups_and_sample):
        self.versions: dict[str, str] = {}
        self._steps, self._groups_and_sample = steps, groups_and_sample

    def step_counts(self, time_step, presample):
        return self._steps

    def groups_and_sample(self, blocks, group_columns, attributes):
        return self._groups_and_sample


class _Recording(LocalScan):
    """The in-process scan, keeping the tables it returns."""

    def step_counts(self, time_step, presample):
        self.steps = super().step_counts(time_step, presample)
        return self.steps

    def groups_and_sample(self, blocks, group_columns, attributes):
        self.sample = super().groups_and_sample(blocks, group_columns, attributes)
        return self.sample


def replay_seconds(events: int) -> float:
    """The least CPU seconds of `RUNS` summaries of the benchmark file of `events` events."""
    workload = build_workload(WORKLOAD)
    path = str(_events_file(workload, events))
    scan = _Recording([path], workload, *scan_columns(workload))
    collect_statistics(scan, [path], workload)  # capture, and warm up
    replay = _Replay(scan.steps, scan.sample)
    spent = []
    for _ in range(RUNS):
        begin = time.process_time()
        collect_statistics(replay, [path], workload)
        spent.append(time.process_time() - begin)
    return min(spent)


def main(sizes: list[int]) -> None:
    print(f"load: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for events in sizes:
        print(f"{events:,} events: driver-side summary {replay_seconds(events):.3f} s of CPU "
              f"(best of {RUNS}, replayed on the in-process engine's tables)", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000_000, 10_000_000])
