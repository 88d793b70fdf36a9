"""A plan's invariants (plan.json's `invariants`, docs/planner.md "When a plan stops holding"):
which measured statistics lie outside the ranges within which the plan stays the planner's
choice. Pure: the streaming engine asks it of its online statistics, `replan` of new ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cepplan.workload.model import Statistics

UNIT_WORDS = {"ms": "millisecond", "s": "second", "min": "minute", "h": "hour", "d": "day"}


@dataclass(frozen=True)
class Violation:
    """One statistic measured outside its range (`low`, `high`: None = unbounded there)."""

    statistic: str  # "rate of PasswordReset", "selectivity of `w.amount > 500` in fraud"
    measured: float
    low: float | None
    high: float | None
    subject: str = ""  # the event type, or "pattern: predicate", as the user names it
    unit: str = ""  # what the measured figure counts ("events per minute"; "" for a share)

    def describe(self) -> str:
        """One line in the user's words: "PasswordReset: 4.1 events per minute, the plan
        holds for 0.2–1.5"."""
        measured = _number(self.measured) + (f" {self.unit}" if self.unit else "")
        if self.low is not None and self.high is not None:
            holds = f"{_number(self.low)}–{_number(self.high)}"
        elif self.low is not None:
            holds = f"{_number(self.low)} or more"
        else:
            holds = f"up to {_number(self.high)}"
        return f"{self.subject or self.statistic}: {measured}, the plan holds for {holds}"


def violations(invariants: Mapping[str, Any], statistics: Statistics) -> list[Violation]:
    """Every statistic of `statistics` outside its range in `invariants`, rates first, each
    in the order the invariants list them; a statistic not measured is not a violation."""
    unit = rate_unit(invariants.get("time_unit"))
    found = []
    for type_name, bounds in (invariants.get("rates") or {}).items():
        measured = statistics.rates.get(type_name)
        if measured is not None and _outside(measured, bounds):
            found.append(Violation(f"rate of {type_name}", measured, bounds.get("low"),
                                   bounds.get("high"), type_name, unit))
    for pattern, predicates in (invariants.get("selectivities") or {}).items():
        measured_here = statistics.selectivities.get(pattern, {})
        for text, bounds in predicates.items():
            measured = measured_here.get(text)
            if measured is not None and _outside(measured, bounds):
                found.append(Violation(f"selectivity of `{text}` in {pattern}", measured,
                                       bounds.get("low"), bounds.get("high"),
                                       f"{pattern}: {text}", "of the events pass"))
    return found


def rate_unit(time_unit: str | None) -> str:
    """"events per minute" for the workload's time unit "min"."""
    word = UNIT_WORDS.get(time_unit or "", time_unit)
    return f"events per {word}" if word else "events per time unit"


def _outside(measured: float, bounds: Mapping[str, Any]) -> bool:
    low, high = bounds.get("low"), bounds.get("high")
    return (low is not None and measured < low) or (high is not None and measured > high)


def _number(value: float | None) -> str:
    return f"{value:.3g}" if value is not None else "?"
