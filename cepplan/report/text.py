"""Words and numbers the Markdown and HTML reports share: plan notation and savings."""

from __future__ import annotations

from collections.abc import Sequence


def notation(steps: Sequence[Sequence[str]]) -> str:
    """`a,b -> c`: the variables of each step, steps in the order they are monitored."""
    return " -> ".join(",".join(step) for step in steps)


def saving(cost: float, baseline: float) -> float | None:
    """Percent saved against a baseline cost (None when the baseline is zero)."""
    if not baseline:
        return None
    return 100.0 * (1.0 - cost / baseline)


def number(value: float | int, suffix: str = "") -> str:
    """A figure for a table: whole numbers in full with thousands separators, others to four
    significant digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}{suffix}"
    return f"{value:.4g}{suffix}"
