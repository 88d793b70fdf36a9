"""The drift rule (`DriftWatch`) when several statistics move: against a reference written
from the documented rule (docs/engine.md, "Adaptive re-planning") — drifted when the value
and both ends of its interval, each widened by 20 %, lie outside the range; a re-plan asked
once some statistic stays drifted at every check over the span (at least 2 checks), never
within the cooldown — over random check sequences; several statistics drifting together ask
one re-plan naming each; a statistic back inside its range before the span ends asks none."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.adaptive.drift import DriftRule, DriftWatch
from cepplan.workload.model import Statistics

TYPES = ("A", "B", "C")
INVARIANTS = {"time_unit": "min",
              "rates": {name: {"low": 1.0, "high": 2.0} for name in TYPES}}
RULE = DriftRule(cooldown=100.0, span=50.0)
STEP = 25.0  # event time between checks: a quarter of the cooldown (the horizon)
INSIDE, NOISY, OUT = 1.5, 2.3, 4.0  # a rate in range; out but its interval not clearly; out


def _check(watch: DriftWatch, at: float, rates: dict[str, float]) -> list[str]:
    """One check where each rate's 95 % interval is ±10 % of it: the statistics re-planned
    for (empty: none)."""
    point = Statistics(rates=rates)
    low = Statistics(rates={k: v * 0.9 for k, v in rates.items()})
    high = Statistics(rates={k: v * 1.1 for k, v in rates.items()})
    return [v.statistic for v in watch.check(at, point, low, high)]


def _reference(sequence: list[dict[str, float]]) -> list[list[str]]:
    """The statistics each check re-plans for, by the documented rule, straight from the
    numbers."""
    def drifted(value: float) -> bool:
        ends = (value, value * 0.9 / RULE.factor, value * 1.1 * RULE.factor)
        return all(end > 2.0 for end in ends) or all(end < 1.0 for end in ends)

    started: dict[str, tuple[int, float]] = {}
    quiet_until = 0.0 + RULE.cooldown
    answers = []
    for index, rates in enumerate(sequence):
        at = index * STEP
        out = [name for name in TYPES if drifted(rates[name])]
        started = {name: (started.get(name, (0, at))[0] + 1, started.get(name, (0, at))[1])
                   for name in out}
        lasting = any(count >= RULE.checks and at - first >= RULE.span
                      for count, first in started.values())
        answers.append([f"rate of {name}" for name in out]
                       if lasting and at >= quiet_until else [])
    return answers


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({name: st.sampled_from((INSIDE, NOISY, OUT, 0.3))
                                      for name in TYPES}), min_size=1, max_size=20))
def test_the_watch_follows_the_documented_rule(sequence):
    watch = DriftWatch(INVARIANTS, RULE, 0.0)
    got = [_check(watch, index * STEP, rates) for index, rates in enumerate(sequence)]
    assert got == _reference(sequence)


def test_statistics_drifting_together_ask_one_replan_naming_each():
    watch = DriftWatch(INVARIANTS, RULE, 0.0)
    calm = {"A": INSIDE, "B": INSIDE, "C": INSIDE}
    wave = {"A": OUT, "B": 0.3, "C": INSIDE}
    asked = [_check(watch, at, calm) for at in (0.0, 25.0, 50.0, 75.0)]
    asked += [_check(watch, at, wave) for at in (100.0, 125.0, 150.0)]
    assert asked[:6] == [[]] * 6  # drifted at 100 and 125: not yet over the span
    assert asked[6] == ["rate of A", "rate of B"]  # one re-plan for both


def test_a_statistic_back_in_range_before_the_span_ends_asks_no_replan():
    watch = DriftWatch(INVARIANTS, RULE, 0.0)
    rates = [{"A": INSIDE}] * 4 + [{"A": OUT}] * 2 + [{"A": INSIDE}] + [{"A": OUT}] * 2
    asked = [_check(watch, index * STEP, {"B": INSIDE, "C": INSIDE, **r})
             for index, r in enumerate(rates)]
    assert asked == [[]] * len(rates)  # the run of drifted checks started again at index 7
