"""One clock for a planning run (docs/reliability.md, "Time limits"): deadlines are
`time.perf_counter()` times; each pass and solver gets a share of the time left, and a run
whose simplest plan cannot fit in the limit is refused, not overrun."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from types import MappingProxyType

from cepplan.errors import CepplanError
from cepplan.planner.plan import Plan


class TimeLimitTooShort(CepplanError):
    """Even the simplest plan cannot be made within the time limit on this machine now:
    `what` is what it takes, `short` by how many seconds it would overrun."""

    def __init__(self, what: str, short: float):
        self.what = what
        self.short = short
        super().__init__(f"the time limit is too short to {what}: that alone would take "
                         f"about {short:.2g} s more here")

    def advice(self, limit: float) -> str:
        """The message for a run whose limit was `limit` seconds, with the limit it needs."""
        needed = math.ceil(10 * (limit + 1.5 * self.short)) / 10
        return (f"{limit:g} s is too short to {self.what}: that alone would take about "
                f"{self.short:.2g} s more here; give it {needed:g} s or more")


def left(deadline: float) -> float:
    """Seconds until `deadline` (0 once it has passed)."""
    return max(0.0, deadline - time.perf_counter())


def share(deadline: float, parts: float) -> float:
    """The deadline of one of `parts` equal shares of the time left (the first share)."""
    now = time.perf_counter()
    return now + max(0.0, deadline - now) / max(1.0, parts)


def with_time_note(plan: Plan, note: str) -> Plan:
    """The plan with `note` added to `provenance.time_limit_notes`: what the time limit cut
    short, for the terminal summary and for anyone reading plan.json."""
    notes = [*plan.provenance.get("time_limit_notes", ()), note]
    return replace(plan, provenance=MappingProxyType({**plan.provenance,
                                                      "time_limit_notes": notes}))
