"""Executing a detection plan over an event table, the way seed 002 §3.3 describes, counting
what it transmits: the ground truth the cost model (§4) is checked against.

Step 1's subevents are pushed: every event of theirs that passes its filters (pushed down to
the source, §5.2) is transmitted. Each time a partial event over the earlier steps completes,
the next step's subevents are pulled over the interval the §4.1 model charges: for AND the
2W around the completion time; for SEQ the gap between the neighbouring detected subevents,
or the rest of the window before the first / after the last. Each event is transmitted at most
once, however many pulls cover it. Negated subevents are pulled after all positive ones.

Scope: primitive operands (a KLEENE operand is one event per partial event: pulls bring in
all its events in the interval); filters are applied, join predicates are not (partial events
are formed on time alone), so compare with a model whose join selectivities are 1.

Reports the transmission factor and the minimum transmission factor of §6.1 (events received
/ events generated; events taking part in a match / events generated) and the detection
latency of each match in steps (from the step holding the match's last event to the end).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.vectorized import evaluate
from cepplan.workload.model import NEGATED, Pattern


@dataclass(frozen=True)
class Simulation:
    """What one plan transmitted over one stream."""

    generated: int
    transmitted: int
    participating: int
    matches: int
    latency_mean: float
    latency_max: int

    @property
    def transmission_factor(self) -> float:
        return self.transmitted / self.generated if self.generated else 0.0

    @property
    def minimum_transmission_factor(self) -> float:
        return self.participating / self.generated if self.generated else 0.0


@dataclass
class _Events:
    times: np.ndarray
    ids: np.ndarray


def simulate(events: pd.DataFrame, pattern: Pattern, steps: Sequence[frozenset[str]],
             seq_ties: str = "strict") -> Simulation:
    """Run `steps` for `pattern` over `events` (canonical columns, see workload.columns)."""
    if any(o.is_complex for o in pattern.operands):
        raise ValueError("the simulator handles patterns over primitive events only")
    window = float(pattern.window or 0.0)
    types = {o.event_type for o in pattern.operands}
    relevant = events[events[EVENT_TYPE].isin(types)].sort_values([EVENT_TS, EVENT_ID])
    source = {o.var: _filtered(relevant, pattern, o.var, o.event_type) for o in pattern.operands}
    available: dict[str, _Events] = {}
    transmitted: set[int] = set()
    done: list[str] = []
    for index, step in enumerate(steps):
        for var in sorted(step):
            if index == 0:
                got = source[var]
            else:
                rows = _partial_matches(pattern, done, available, window, seq_ties)
                got = _pull(source[var], _intervals(pattern, var, done, rows, window, seq_ties))
            available[var] = got
            transmitted.update(got.ids.tolist())
        done += [v for v in step if pattern.operand(v).kind != NEGATED]
    positives = [o.var for o in pattern.operands if o.kind != NEGATED]
    rows = _partial_matches(pattern, positives, available, window, seq_ties)
    keep = np.ones(len(rows[0]), dtype=bool)
    for negated in pattern.negated:
        lo, hi, lo_open, hi_open = _intervals(pattern, negated.var, positives, rows, window,
                                              seq_ties)
        keep &= _count_in(available[negated.var].times, lo, hi, lo_open, hi_open) == 0
    times, ids = rows[0][keep], rows[1][keep]
    step_of = {v: i for i, s in enumerate(steps) for v in s}
    last_var = np.argmax(times, axis=1) if len(times) else np.array([], dtype=int)
    latencies = np.array([len(steps) - step_of[positives[i]] for i in last_var])
    return Simulation(len(relevant), len(transmitted), len(np.unique(ids)) if len(ids) else 0,
                      len(times), float(latencies.mean()) if len(latencies) else 0.0,
                      int(latencies.max()) if len(latencies) else 0)


def _filtered(events: pd.DataFrame, pattern: Pattern, var: str, type_name: str) -> _Events:
    """The events of `var`'s type passing its filters (pushed down, seed 002 §5.2)."""
    rows = events[events[EVENT_TYPE] == type_name]
    mask = np.ones(len(rows), dtype=bool)
    for predicate in pattern.filters(var):
        columns = {(var, c): rows[c].to_numpy() for c in rows.columns if not c.startswith("__")}
        mask &= evaluate(predicate.portable, columns, len(rows)).astype(bool)
    rows = rows[mask]
    return _Events(rows[EVENT_TS].to_numpy(float), rows[EVENT_ID].to_numpy(np.int64))


def _partial_matches(pattern: Pattern, variables: list[str], available: dict[str, _Events],
                     window: float, seq_ties: str) -> tuple[np.ndarray, np.ndarray]:
    """(times, ids), one row per partial match over `variables`, columns in position order."""
    ordered = sorted(variables, key=lambda v: pattern.operand(v).position)
    if not ordered:
        return np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int64)
    first = available[ordered[0]]
    times, ids = first.times[:, None], first.ids[:, None]
    for var in ordered[1:]:
        got = available[var]
        if pattern.operator == "SEQ":
            side = "right" if seq_ties == "strict" else "left"
            lo = np.searchsorted(got.times, times.max(axis=1), side=side)
        else:
            lo = np.searchsorted(got.times, times.max(axis=1) - window, side="left")
        hi = np.searchsorted(got.times, times.min(axis=1) + window, side="right")
        counts = np.maximum(hi - lo, 0)
        rows = np.repeat(np.arange(len(times)), counts)
        picks = np.repeat(lo, counts) + (np.arange(counts.sum()) - np.repeat(
            np.cumsum(counts) - counts, counts))
        times = np.column_stack([times[rows], got.times[picks]])
        ids = np.column_stack([ids[rows], got.ids[picks]])
        distinct = (ids[:, :-1] != ids[:, -1:]).all(axis=1)
        times, ids = times[distinct], ids[distinct]
    return times, ids


def _intervals(pattern: Pattern, var: str, done: list[str], rows: tuple[np.ndarray, np.ndarray],
               window: float, seq_ties: str) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """Pull intervals [lo, hi] per partial match (open ends flagged), as §4.1 charges them."""
    times = rows[0]
    if not len(times):
        return np.zeros(0), np.zeros(0), False, False
    if pattern.operator != "SEQ":
        completed = times.max(axis=1)
        return completed - window, completed + window, False, False
    positions = sorted(pattern.operand(v).position for v in done)
    position = pattern.operand(var).position
    strict = seq_ties == "strict"
    after = np.searchsorted(positions, position)
    if 0 < after < len(positions):
        return times[:, after - 1], times[:, after], strict, strict
    first, last = times[:, 0], times[:, -1]
    if after == 0:
        return last - window, first, False, strict
    return last, first + window, strict, False


def _pull(source: _Events, intervals: tuple[np.ndarray, np.ndarray, bool, bool]) -> _Events:
    lo, hi, lo_open, hi_open = intervals
    if not len(lo):
        return _Events(source.times[:0], source.ids[:0])
    order = np.argsort(lo)
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    # an event is covered if some interval with lo <= t has hi >= t
    idx = np.searchsorted(lo, source.times, side="left" if lo_open else "right") - 1
    covered = idx >= 0
    covered[covered] = (reach[idx[covered]] > source.times[covered]) if hi_open else (
        reach[idx[covered]] >= source.times[covered])
    return _Events(source.times[covered], source.ids[covered])


def _count_in(times: np.ndarray, lo: np.ndarray, hi: np.ndarray, lo_open: bool,
              hi_open: bool) -> np.ndarray:
    start = np.searchsorted(times, lo, side="right" if lo_open else "left")
    end = np.searchsorted(times, hi, side="left" if hi_open else "right")
    return np.maximum(end - start, 0)
