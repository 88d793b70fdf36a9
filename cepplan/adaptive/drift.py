"""When a live stream re-plans (docs/engine.md, "Adaptive re-planning"): a statistic counts
as drifted at a check when it lies outside the plan's invariant range beyond noise — its whole
95 % interval over the horizon is outside the range, by more than `DriftRule.factor` — and a
re-plan is asked for once some statistic has drifted at every check over `DriftRule.span` of
event time (at least `checks` of them: 3 when checks come each quarter horizon), never within
`cooldown` of event time after the last switch. A stationary stream, whose figures scatter
inside their intervals, does not flap."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cepplan.planner.invariants import Violation, violations
from cepplan.workload.model import Statistics

CHECKS = 2  # consecutive checks a statistic must have drifted at, at least
FACTOR = 1.2  # how far beyond the range (as a ratio) the interval's nearer end must lie


@dataclass(frozen=True)
class DriftRule:
    """The hysteresis: drifted at every check over `span` of event time and at `checks`
    consecutive checks at least, `factor` beyond the range, `cooldown` (event time) after a
    switch."""

    cooldown: float
    span: float
    checks: int = CHECKS
    factor: float = FACTOR


class DriftWatch:
    """The drift of one plan's invariants over the stream's checks."""

    def __init__(self, invariants: Mapping[str, Any], rule: DriftRule, since: float):
        self.invariants = invariants
        self.rule = rule
        self.quiet_until = since + rule.cooldown
        self.runs: dict[str, tuple[int, float]] = {}  # statistic -> (consecutive checks
        # drifted, the time of the first of them)

    def check(self, at: float, point: Statistics, low: Statistics, high: Statistics
              ) -> list[Violation]:
        """Record one check at event time `at` of the statistics measured (`point`) and the
        ends of their intervals (`low`, `high`); the violations to re-plan for (none while
        the drift has not lasted or the cooldown runs)."""
        drifted = self.drifted(point, low, high)
        self.runs = {v.statistic: (self.runs.get(v.statistic, (0, at))[0] + 1,
                                   self.runs.get(v.statistic, (0, at))[1]) for v in drifted}
        if at < self.quiet_until:
            return []
        lasting = [v for v in drifted if self.runs[v.statistic][0] >= self.rule.checks
                   and at - self.runs[v.statistic][1] >= self.rule.span]
        return drifted if lasting else []

    def drifted(self, point: Statistics, low: Statistics, high: Statistics) -> list[Violation]:
        """The statistics outside their ranges at their value and at both ends of their
        intervals, each widened by the factor."""
        shrunk, grown = _scaled(low, 1 / self.rule.factor), _scaled(high, self.rule.factor)
        at_ends = ({v.statistic for v in violations(self.invariants, shrunk)}
                   & {v.statistic for v in violations(self.invariants, grown)})
        return [v for v in violations(self.invariants, point) if v.statistic in at_ends]


def _scaled(statistics: Statistics, factor: float) -> Statistics:
    """Every rate and selectivity times `factor`."""
    return replace(statistics,
                   rates={k: v * factor for k, v in statistics.rates.items()},
                   selectivities={p: {t: v * factor for t, v in s.items()}
                                  for p, s in statistics.selectivities.items()})
