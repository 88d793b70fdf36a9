"""Time units and durations: `"500ms"`, `"30s"`, `"5min"`, `"2h"`, `"1d"` or a bare number.

Standard library only: the generated Spark job ships this file (its runtime reads the unit
table through `spark_source`).
"""

from __future__ import annotations

import math
import re

SECONDS_PER_UNIT = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
MAX_DURATION = 1e12  # time units: beyond it, rate x window overflows the cost models

_DURATION = re.compile(
    r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*(ms|s|min|h|d)\s*$"
)


class DurationError(ValueError):
    """A duration that cannot be read, or that is not positive."""


def parse_duration(value: object, time_unit: str) -> float:
    """A positive duration converted to `time_unit`; bare numbers are already in it."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DurationError(f"expected a number or a string such as '30s', got {value!r:.40}")
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise DurationError(
                f"cannot read duration {value!r:.40}: write a number and a unit"
                " (ms, s, min, h, d), e.g. '30s'"
            )
        number = float(value.strip().removesuffix(match.group(2)))
        amount = number * SECONDS_PER_UNIT[match.group(2)] / SECONDS_PER_UNIT[time_unit]
    else:
        amount = float(value)
    if not math.isfinite(amount) or amount <= 0:
        raise DurationError(f"must be positive and finite, got {value!r:.40}")
    if amount > MAX_DURATION:
        raise DurationError(f"{value!r:.40} is longer than the largest duration cepplan plans "
                            f"for, {MAX_DURATION:g} {time_unit}")
    return amount
