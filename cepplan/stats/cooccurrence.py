"""Within-key co-occurrence of a partitioned pattern's variables, measured on the selectivity
sample (docs/measuring.md, "Keyed statistics"): what a keyed plan costs, counted directly.

Events combine only within a key; how often they do depends on how each key's events cluster in
time (sessions), not only on its rates. Two figures, per variable's events after its filters:

- coverage(e | U): the share of e's events that lie in some candidate tuple over U ∪ {e} in the
  same key — one event per variable of U, all within the window, in the order the SEQ
  requires. It is the share of e's events a plan pulls once the variables U are in its earlier
  steps (the engine keeps an event of a later step only when its earlier variables have kept
  events near it, docs/planner.md, "Keyed workloads").
- tuples(S): candidate tuples over the variables S per time unit: combinations, one event per
  variable, in one key, within the window, in sequence order for a SEQ — what the matcher's
  partial matches over S are made of before the join predicates.

Both are measured on anchors whose window lies inside the sample's kept blocks, so a block's
edge never hides a partner. Kleene variables count one event each in coverage and are left out
of tuples.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cepplan.stats.block_sample import block_hash, block_index
from cepplan.stats.scan import SampleBlocks
from cepplan.stats.selectivity import attribute_values, partition_codes
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.vectorized import evaluate, referenced_keys
from cepplan.workload.model import FILTER, KLEENE, NEGATED, Pattern

MAX_MEASURED = 6  # positive variables: coverage for every subset is n·2^(n-1) figures


@dataclass(frozen=True)
class _Var:
    """One variable's events after its filters, sorted by (key, time)."""

    key: np.ndarray  # key code * stride + time offset: searchable in one array
    part: np.ndarray
    times: np.ndarray
    eligible: np.ndarray  # anchors whose window lies inside the sample


class _Sample:
    """A pattern's sampled events split by variable, with the searches the figures need."""

    def __init__(self, pattern: Pattern, sample: pd.DataFrame, blocks: SampleBlocks,
                 observed: tuple[float, float]):
        self.window = float(pattern.window)
        times = sample[EVENT_TS].to_numpy(dtype=np.float64)
        self.t0 = float(times.min()) if len(times) else 0.0
        self.stride = (float(times.max()) - self.t0 if len(times) else 0.0) \
            + 4 * self.window + 1.0
        part = partition_codes(sample, list(pattern.partition_by)).astype(np.int64)
        keyed = _key_present(sample, pattern.partition_by)
        names = sample[EVENT_TYPE].astype(str).to_numpy() if len(sample) else np.zeros(0, str)
        ids = sample[EVENT_ID].to_numpy()
        self.vars: dict[str, _Var] = {}
        self.counts: dict[str, int] = {}
        for operand in pattern.operands:
            rows = np.flatnonzero((names == operand.event_type) & keyed)
            rows = rows[_passes_filters(pattern, operand.var, sample, rows)]
            self.counts[operand.var] = len(rows)
            rows = rows[np.lexsort((ids[rows], times[rows], part[rows]))]
            t = times[rows]
            self.vars[operand.var] = _Var(part[rows] * self.stride + (t - self.t0), part[rows],
                                          t, _inside(t, self.window, blocks, observed))

    def after(self, var: str, part: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Per query, the time of `var`'s earliest event after t in the key (inf: none)."""
        target = self.vars[var]
        at = np.searchsorted(target.key, part * self.stride + (t - self.t0), "right")
        found = np.full(len(t), np.inf)
        ok = at < len(target.key)
        ok[ok] &= target.part[at[ok]] == part[ok]
        found[ok] = target.times[at[ok]]
        return found

    def before(self, var: str, part: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Per query, the time of `var`'s latest event before t in the key (-inf: none)."""
        target = self.vars[var]
        at = np.searchsorted(target.key, part * self.stride + (t - self.t0), "left") - 1
        found = np.full(len(t), -np.inf)
        ok = at >= 0
        ok[ok] &= target.part[at[ok]] == part[ok]
        found[ok] = target.times[at[ok]]
        return found

    def upto(self, var: str, part: np.ndarray, t: np.ndarray, cumulative: np.ndarray,
             inclusive: bool) -> np.ndarray:
        """`cumulative` (aligned with var's events) at var's last event in the key at or
        before t (strictly before unless `inclusive`); 0 where there is none."""
        target = self.vars[var]
        at = np.searchsorted(target.key, part * self.stride + (t - self.t0),
                             "right" if inclusive else "left") - 1
        out = np.zeros(len(t))
        ok = at >= 0
        ok[ok] &= target.part[at[ok]] == part[ok]
        out[ok] = cumulative[at[ok]]
        return out


def measure(pattern: Pattern, sample: pd.DataFrame, blocks: SampleBlocks,
            observed: tuple[float, float], rates: Mapping[str, float]) -> dict:
    """The pattern's `cooccurrence` entry of stats.json: per variable its sampled events and
    anchors, coverage of each variable by each set of the others, and candidate tuples per
    time unit of each set of two or more variables; `rates` are the types' measured rates."""
    positives = sorted(pattern.positive, key=lambda o: o.position)
    if pattern.window_events:
        return {"reason": "not measured for a count window"}
    if pattern.window is None:
        return {"reason": "the pattern has no window"}
    if any(o.is_complex for o in pattern.operands):
        return {"reason": "binds complex events (measured by running their patterns)"}
    if len(positives) > MAX_MEASURED:
        return {"reason": f"more than {MAX_MEASURED} variables: the planner uses the key "
                          "profile alone"}
    data = _Sample(pattern, sample, blocks, observed)
    type_counts = sample[EVENT_TYPE].astype(str).value_counts() if len(sample) else {}
    filtered_rates = {o.var: rates.get(o.event_type, 0.0) * data.counts[o.var]
                      / max(1, int(type_counts.get(o.event_type, 0))) for o in pattern.operands}
    seq = pattern.operator == "SEQ"
    names = [o.var for o in positives]
    position = {o.var: o.position for o in pattern.operands}
    coverage: dict[str, dict[str, float]] = {}
    for operand in pattern.operands:
        var = operand.var
        others = [v for v in names if v != var]
        subsets = ([tuple(others)] if operand.kind == NEGATED else
                   [s for r in range(1, len(others) + 1)
                    for s in itertools.combinations(others, r)])
        anchors = data.vars[var]
        shares = {}
        for subset in subsets:
            covered = (_covered_seq(data, var, subset, position) if seq
                       else _covered_and(data, var, subset))
            shares[",".join(subset)] = _mean(covered, anchors.eligible)
        coverage[var] = shares
    plain = [v for v in names if pattern.operand(v).kind != KLEENE]
    tuples = {}
    for size in range(2, len(plain) + 1):
        for subset in itertools.combinations(plain, size):
            tuples[",".join(subset)] = _tuples(data, subset, filtered_rates, seq)
    return {"window": data.window,
            "events": dict(data.counts),
            "anchors": {v: int(data.vars[v].eligible.sum()) for v in data.vars},
            "rates": filtered_rates,
            "coverage": coverage,
            "tuples": tuples}


def _mean(values: np.ndarray, eligible: np.ndarray) -> float | None:
    count = int(eligible.sum())
    return float(values[eligible].mean()) if count else None


def _covered_seq(data: _Sample, var: str, subset: Sequence[str],
                 position: Mapping[str, int]) -> np.ndarray:
    """Whether each of var's events has, in its key, a chain over `subset` in sequence order
    around it spanning at most the window: the earliest chain after it and the latest before
    it are the tightest, so they decide."""
    anchors = data.vars[var]
    part, t = anchors.part, anchors.times
    end, start = t.copy(), t.copy()
    for other in sorted((v for v in subset if position[v] > position[var]),
                        key=lambda v: position[v]):
        end = data.after(other, part, end)
    for other in sorted((v for v in subset if position[v] < position[var]),
                        key=lambda v: -position[v]):
        start = data.before(other, part, start)
    return end - start <= data.window


def _covered_and(data: _Sample, var: str, subset: Sequence[str]) -> np.ndarray:
    """Whether each of var's events has, in its key, one event of every variable of `subset`
    with all of them within one window: each variable's nearest event before and after it are
    the candidates; the tightest choice splits them at a threshold on the distance before."""
    anchors = data.vars[var]
    part, t = anchors.part, anchors.times
    back = np.vstack([t - data.before(v, part, t) for v in subset])
    ahead = np.vstack([data.after(v, part, t) - t for v in subset])
    best = np.full(len(t), np.inf)
    for threshold in [np.zeros(len(t)), *back]:
        late = back > threshold[None, :]
        reach = np.where(late, ahead, 0.0).max(axis=0)
        best = np.minimum(best, threshold + reach)
    return best <= data.window


def _tuples(data: _Sample, subset: Sequence[str], rates: Mapping[str, float],
            seq: bool) -> float:
    """Candidate tuples over `subset` per time unit: per anchor (its earliest event: the first
    variable for a SEQ, any for an AND) the tuples within (t, t + W], averaged over eligible
    anchors and times the anchor variable's rate."""
    total = 0.0
    for anchor in (subset[:1] if seq else subset):
        events = data.vars[anchor]
        if not events.eligible.any():
            continue
        part, t = events.part[events.eligible], events.times[events.eligible]
        rest = [v for v in subset if v != anchor]
        if seq:
            per = _chains(data, rest, part, t, t + data.window)
        else:
            per = np.ones(len(t))
            for other in rest:
                # counts within the key (`upto` gives 0 where the key has none by then)
                target = data.vars[other]
                counts = _cumsum_by_group(np.ones(len(target.key)), _group_starts(target.part))
                per *= (data.upto(other, part, t + data.window, counts, True)
                        - data.upto(other, part, t, counts, True))
        total += rates[anchor] * float(per.mean())
    return total


def _chains(data: _Sample, chain: Sequence[str], part: np.ndarray, low: np.ndarray,
            high: np.ndarray) -> np.ndarray:
    """Per query, chains over `chain` (strictly increasing times, one key) inside (low, high]:
    C(j) = Q_{j,m}(high) − Σ_{i≥j} Q_{j,i}(low) · C(i+1), Q_{j,i}(t) the chains j..i ending by
    t (a chain's part up to `low` and the rest after it)."""
    m = len(chain)
    cumulative = _prefix_chains(data, chain)
    inside = [np.zeros(len(low))] * m + [np.ones(len(low))]
    for j in range(m - 1, -1, -1):
        value = data.upto(chain[m - 1], part, high, cumulative[(j, m - 1)], True)
        for i in range(j, m):
            value = value - data.upto(chain[i], part, low, cumulative[(j, i)], True) \
                * inside[i + 1]
        inside[j] = value
    return inside[0]


def _prefix_chains(data: _Sample, chain: Sequence[str]) -> dict[tuple[int, int], np.ndarray]:
    """Q_{j,i} for j <= i: aligned with chain[i]'s events, the chains chain[j..i] of one key
    whose last event is that event or an earlier one."""
    out: dict[tuple[int, int], np.ndarray] = {}
    for i, var in enumerate(chain):
        events = data.vars[var]
        starts = _group_starts(events.part)
        for j in range(i + 1):
            if j == i:
                ending = np.ones(len(events.key))
            else:
                ending = data.upto(chain[i - 1], events.part, events.times, out[(j, i - 1)],
                                   False)
            out[(j, i)] = _cumsum_by_group(ending, starts)
    return out


def _group_starts(part: np.ndarray) -> np.ndarray:
    """Per position, where its key's run starts (rows sorted by key)."""
    if not len(part):
        return np.zeros(0, dtype=np.int64)
    new = np.concatenate([[True], part[1:] != part[:-1]])
    return np.maximum.accumulate(np.where(new, np.arange(len(part)), 0))


def _cumsum_by_group(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    total = np.cumsum(values)
    return total - (total[starts] - values[starts])


def _inside(times: np.ndarray, window: float, blocks: SampleBlocks,
            observed: tuple[float, float]) -> np.ndarray:
    """Anchors whose window, one either side, lies in kept blocks (or outside the observed
    span, where the engine finds nothing either)."""
    ok = np.ones(len(times), dtype=bool)
    if blocks.threshold is None or not len(times):
        return ok
    for shifted in (times - window, times + window):
        block = block_index(shifted, blocks.length)
        beyond = (shifted < observed[0]) | (shifted > observed[1])
        ok &= beyond | (block_hash(block, blocks.seed) < blocks.threshold)
    return ok


def _key_present(sample: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Rows whose key columns all hold a value (others join nothing, as in the engine)."""
    present = np.ones(len(sample), dtype=bool)
    for column in columns:
        present &= sample[column].notna().to_numpy()
    return present


def _passes_filters(pattern: Pattern, var: str, sample: pd.DataFrame,
                    rows: np.ndarray) -> np.ndarray:
    """Which of `rows` pass every filter of `var` (one-variable predicates)."""
    keep = np.ones(len(rows), dtype=bool)
    for predicate in pattern.predicates:
        if predicate.kind != FILTER or predicate.variables != {var} or not len(rows):
            continue
        columns = {key: attribute_values(sample, key[-1], rows)
                   for key in referenced_keys(predicate.portable)}
        keep &= np.asarray(evaluate(predicate.portable, columns, len(rows)), dtype=bool)
    return keep

