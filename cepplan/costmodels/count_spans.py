"""The time a count window spans, for the cost models, which reason in time windows.

A count window of N (`"within": "N events"`) lets a match's first and last events lie N
positions apart among its partition's events. Those events arrive at the partition's total
rate r (every primitive type carrying the partition's attributes, per key when the keys are
measured), so N positions span N / r time units on average: the time window W of the seed's
cost model (004 §3.3) for a count-based window (004 §6.2.1, Fig. 11(d)).
"""

from __future__ import annotations

from dataclasses import replace

from cepplan.workload.model import Pattern, Statistics, Workload


def partition_rate(workload: Workload, pattern: Pattern, statistics: Statistics) -> float:
    """Events per time unit in one partition of `pattern`: the rates of every primitive type
    with the partition's attributes, divided among the measured keys."""
    total = sum(statistics.rates.get(name, 0.0) for name, event_type in
                workload.event_types.items()
                if all(k in event_type.attributes for k in pattern.partition_by))
    keyed = statistics.keyed.get(pattern.name)
    return total / keyed.keys if keyed is not None and keyed.keys > 0 else total


def count_span(workload: Workload, pattern: Pattern, statistics: Statistics) -> float:
    """The expected time span of the pattern's count window (0 when no event counts)."""
    rate = partition_rate(workload, pattern, statistics)
    return pattern.window_events / rate if rate > 0 and pattern.window_events else 0.0


def timed(workload: Workload, statistics: Statistics) -> Workload:
    """The workload with each count window planned as its expected time span."""
    patterns = tuple(replace(p, window=count_span(workload, p, statistics))
                     if p.window_events else p for p in workload.patterns)
    return replace(workload, patterns=patterns)
