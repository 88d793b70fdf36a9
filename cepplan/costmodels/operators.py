"""Expected cost and latency of a multi-step detection plan, per operator (seed 002 §4.1).

A plan is a tuple of steps (sets of variables). Its expected cost, in events transmitted per
time unit, is Σ_i P_{S_i} · cost_{S_i}: step 1 is monitored continuously (P_{S_1} = 1), step i
is monitored, each time the partial event over the earlier steps completes, for an interval
L_e per subevent e. Written as cost = Σ_e f_e · c_e, where c_e is e's cost per time unit when
monitored continuously (its rate; for a complex subevent, the cost of its own plan) and f_e is
the fraction of time e is monitored (1 in step 1, P_{S_i} · L_e later).

- AND: P_{S_i} = Σ_{e_j} P(e_j now) Π_{e_t ≠ e_j} P(e_t within W) over the earlier steps'
  subevents; L_e = 2W (§4.1, And operator).
- SEQ: P_{S_i} = P(e_{p_t} now) · R(W), R(W) = P(X_{p_1} + ... + X_{p_{t-1}} <= W) over the
  earlier steps' subevents in sequence order; L_e = E[X_{p_j} | Σ X <= W] between p_j and
  p_{j+1}, W - E[Σ X | Σ X <= W] before the first or after the last (§4.1, Sequence operator).
- Negation: the negated subevents are monitored after all positive ones, over the intervals
  above, or all together in the naive plan (§4.1, Negation operator).
- OR: only the naive plan (§4.1, Or operator).
- Complex subevents: monitoring one over an interval L costs its plan's cost over L + its own
  window, the interval its own subevents span (§4.1, generalisation to complex subevents).
- Join predicates over the earlier steps' variables scale P_{S_i} by their selectivity
  (attribute constraints, §5.2): fewer partial events complete.

Latency (§4.1): AND — Σ over steps of the largest latency in the step (plan steps for
primitive subevents); SEQ — the same sum, but only from the step holding the sequence's last
subevent on; OR — the largest operand latency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from cepplan.costmodels import discrete_sums, hypoexponential
from cepplan.costmodels.keyed import KeyedCosts
from cepplan.costmodels.occurrence import POISSON, Occurrence, gap_pmf, p_within, trigger_intensity

AND, SEQ, OR = "AND", "SEQ", "OR"
_GRID = 400  # cells of the window when a sequence mixes discrete gaps (Bernoulli, Markov)


@dataclass(frozen=True)
class OperandModel:
    """A pattern's operand as the cost model sees it."""

    var: str
    occurrence: Occurrence
    position: int
    negated: bool = False
    extra_window: float = 0.0  # a complex subevent's own window
    source: str = ""  # operands with the same non-empty source share transmitted events
    event_type: str = ""  # a primitive operand's type
    selectivity: float = 1.0  # fraction of the type's events its filters keep


@dataclass(frozen=True)
class PatternModel:
    """An operator over operand models, its window W and its join selectivities."""

    operator: str
    window: float
    operands: tuple[OperandModel, ...]
    joins: tuple[tuple[frozenset[str], float], ...] = ()
    keyed: KeyedCosts | None = None  # a partitioned pattern's figures within its keys

    @property
    def positives(self) -> tuple[OperandModel, ...]:
        return tuple(o for o in self.operands if not o.negated)

    @property
    def negatives(self) -> tuple[OperandModel, ...]:
        return tuple(o for o in self.operands if o.negated)

    def operand(self, var: str) -> OperandModel:
        for operand in self.operands:
            if operand.var == var:
                return operand
        raise KeyError(var)


def positive_part(model: PatternModel) -> PatternModel:
    """The model without its negated operands (and the joins that mention them): what plans
    over the positive subevents are costed on before negation is added (seed 002 §4.1)."""
    negated = {o.var for o in model.negatives}
    if not negated:
        return model
    return replace(model, operands=model.positives,
                   joins=tuple(j for j in model.joins if not j[0] & negated))


def join_selectivity(model: PatternModel, subset: frozenset[str]) -> float:
    """Product of the selectivities of the join predicates whose variables all lie in subset."""
    return math.prod(sel for variables, sel in model.joins if variables <= subset)


def reachability(model: PatternModel, subset: frozenset[str]) -> float:
    """P_S per time unit: how often the partial event over `subset` (positive variables)
    completes (seed 002 §4.1, formulas (i)/(ii) for AND, P_{S_i} = P(e_{p_t}) R(W) for SEQ)."""
    members = [o for o in model.positives if o.var in subset]
    if not members:
        return 1.0
    period = _trigger_period(model)
    if model.operator == SEQ:
        members.sort(key=lambda o: o.position)
        cdf = _gap_cdf(tuple(o.occurrence for o in members[:-1]), model.window)
        base = trigger_intensity(members[-1].occurrence, period) * cdf
    else:
        within = [p_within(o.occurrence, model.window) for o in members]
        base = 0.0
        for j, operand in enumerate(members):
            others = math.prod(w for t, w in enumerate(within) if t != j)
            base += trigger_intensity(operand.occurrence, period) * others
    return base * join_selectivity(model, subset)


def monitoring_interval(model: PatternModel, var: str, subset: frozenset[str]) -> float:
    """L_e: how long `var` is monitored each time the partial event over `subset` completes
    (2W for AND; the expected gap or window rest for SEQ; + a complex subevent's window)."""
    operand = model.operand(var)
    if model.operator != SEQ:
        return 2.0 * model.window + operand.extra_window
    members = sorted((o for o in model.positives if o.var in subset), key=lambda o: o.position)
    _, means = _gap_stats(tuple(o.occurrence for o in members[:-1]), model.window)
    for j in range(len(members) - 1):
        if members[j].position < operand.position < members[j + 1].position:
            return means[j] + operand.extra_window
    return max(0.0, model.window - sum(means)) + operand.extra_window


def pulled_fraction(model: PatternModel, var: str, done: frozenset[str]) -> float:
    """f_e after the positive variables `done`: P_S · L_e, or for a partitioned pattern the
    share of e's events pulled within the keys (`costmodels.keyed`)."""
    if model.keyed is not None:
        share = model.keyed.pulled_share(var, done)
        if share is not None:
            return share
    return reachability(model, done) * monitoring_interval(model, var, done)


def delivered_share(model: PatternModel, steps: Sequence[frozenset[str]],
                    subset: frozenset[str]) -> float:
    """The share of the partial matches over `subset` (positive variables) whose events all
    reach the matcher under the plan `steps`: a pulled variable's events arrive only around a
    partial match of the variables of the steps before its own (D). 1 when every pulled
    variable of `subset` has its D inside `subset`; else, for the one of the latest step,
    f_v(D) / f_v(D ∩ subset): the chance that the rest of D lies around the tuple (its
    earlier steps being nested, that one's D holds the others')."""
    before: dict[str, frozenset[str]] = {}
    done: frozenset[str] = frozenset()
    for index, step in enumerate(steps):
        if index:
            before.update({v: done for v in step})
        done = done | {v for v in step if not model.operand(v).negated}
    pulled = [v for v in subset if v in before and not before[v] <= subset]
    if not pulled:
        return 1.0
    latest = max(pulled, key=lambda v: len(before[v]))
    inside = before[latest] & subset
    given = pulled_fraction(model, latest, inside) if inside else 1.0
    return min(1.0, pulled_fraction(model, latest, before[latest]) / given) if given > 0 else 0.0


def monitoring_fractions(model: PatternModel, steps: Sequence[frozenset[str]]) -> dict[str, float]:
    """f_e for every variable of the plan: the fraction of time it is monitored."""
    check_steps(model, steps)
    fractions: dict[str, float] = {}
    done: frozenset[str] = frozenset()
    for index, step in enumerate(steps):
        if index == 0:
            fractions.update({v: 1.0 for v in step})
        else:
            for var in step:
                fractions[var] = pulled_fraction(model, var, done)
        done = done | {v for v in step if not model.operand(v).negated}
    return fractions


def plan_cost(model: PatternModel, steps: Sequence[frozenset[str]],
              costs: Mapping[str, float]) -> float:
    """Expected events transmitted per time unit: Σ_i P_{S_i} cost_{S_i} (seed 002 §4)."""
    if model.operator == OR:
        return grouped_cost(model, {o.var: 1.0 for o in model.operands}, costs)
    return grouped_cost(model, monitoring_fractions(model, steps), costs)


def grouped_cost(model: PatternModel, fractions: Mapping[str, float],
                 costs: Mapping[str, float]) -> float:
    """Σ_e f_e c_e, except that variables bound to the same source (same type, same filters)
    share transmissions — an event is sent once (seed 002 §3.3) — so a group costs
    c · (1 - Π (1 - f_e)), monitoring periods taken as independent; a pushed member (f = 1)
    makes the whole group cost c. Distinct sources: exactly the seed's sum."""
    groups: dict[str, list[str]] = {}
    for var in fractions:
        groups.setdefault(model.operand(var).source or f"var:{var}", []).append(var)
    total = 0.0
    for members in groups.values():
        if len(members) == 1:
            total += fractions[members[0]] * costs[members[0]]
        else:
            quiet = math.prod(1.0 - min(1.0, fractions[v]) for v in members)
            total += max(costs[v] for v in members) * (1.0 - quiet)
    return total


def plan_latency(model: PatternModel, steps: Sequence[frozenset[str]],
                 latencies: Mapping[str, int]) -> int:
    """Detection latency in steps (seed 002 §4.1): AND sums the steps, SEQ counts from the
    step holding its last subevent, OR takes the slowest operand."""
    if model.operator == OR:
        return max(latencies[o.var] for o in model.operands)
    per_step = [max(latencies[v] for v in step) for step in steps]
    if model.operator == SEQ:
        last = max(model.positives, key=lambda o: o.position).var
        first = next(i for i, step in enumerate(steps) if last in step)
        return sum(per_step[first:])
    return sum(per_step)


def occurrence_rate(model: PatternModel) -> float:
    """Occurrences per time unit of the complex event itself: the reachability of the final
    state (seed 002 §4), times P(no negated event in its interval) for negation (§4.1)."""
    if model.operator == OR:
        return sum(trigger_intensity(o.occurrence, 0.0) for o in model.operands)
    everything = frozenset(o.var for o in model.positives)
    rate = reachability(model, everything)
    if model.keyed is not None and len(everything) > 1:
        rate *= model.keyed.factor(everything)
    for negated in model.negatives:
        interval = monitoring_interval(model, negated.var, everything)
        rate *= 1.0 - p_within(negated.occurrence, interval)
    return rate


def check_steps(model: PatternModel, steps: Sequence[frozenset[str]]) -> None:
    """A valid plan covers each variable once; negated variables are monitored in step 1 of
    the naive plan or after every positive one (seed 002 §4.1, Negation operator)."""
    seen = [v for step in steps for v in step]
    if sorted(seen) != sorted(o.var for o in model.operands) or any(not s for s in steps):
        raise ValueError(f"steps {steps} do not cover each variable exactly once")
    negated = {o.var for o in model.negatives}
    for index, step in enumerate(steps):
        if step & negated and index > 0:
            earlier = {v for s in steps[:index] for v in s}
            if not {o.var for o in model.positives} <= earlier:
                raise ValueError("negated subevents are monitored after every positive one")
        elif step & negated and len(steps) > 1 and index == 0:
            raise ValueError("negated subevents in step 1 only in the one-step (naive) plan")


def _trigger_period(model: PatternModel) -> float:
    return 2.0 * model.window if model.operator == AND else model.window


def _gap_cdf(gaps: tuple[Occurrence, ...], window: float) -> float:
    """R(W) of a sequence's gaps alone: for exponential gaps without the conditional means,
    which cost a grid of matrix powers (`_gap_stats`)."""
    if all(g.kind == POISSON for g in gaps):
        return hypoexponential.hypoexponential_cdf(tuple(g.rate for g in gaps), window)
    return _gap_stats(gaps, window)[0]


def _gap_stats(gaps: tuple[Occurrence, ...], window: float) -> tuple[float, tuple[float, ...]]:
    """(R(W), E[X_j | Σ X <= W]) for the gaps of a sequence, exact for exponential gaps,
    by convolution on a grid otherwise (seed 002 §4.1)."""
    if all(g.kind == POISSON for g in gaps):
        rates = tuple(g.rate for g in gaps)
        return (hypoexponential.hypoexponential_cdf(rates, window),
                hypoexponential.conditional_gap_means(rates, window))
    step = min([g.step for g in gaps if g.kind != POISSON] + [window / _GRID])
    steps = math.floor(window / step + 1e-9)
    pmfs = [gap_pmf(g, step, steps) for g in gaps]
    cdf = discrete_sums.sum_cdf(pmfs, steps)
    means = discrete_sums.conditional_gap_means(pmfs, steps)
    return cdf, tuple(m * step for m in means)
