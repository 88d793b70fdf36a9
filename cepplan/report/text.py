"""Words and numbers the Markdown and HTML reports share: plan notation, savings, and a flat
view of the sections the later passes add to a plan."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson


def notation(steps: Sequence[Sequence[str]]) -> str:
    """`a,b -> c`: the variables of each step, steps in the order they are monitored."""
    return " -> ".join(",".join(step) for step in steps)


def saving(cost: float, baseline: float) -> float | None:
    """Percent saved against a baseline cost (None when the baseline is zero)."""
    if not baseline:
        return None
    return 100.0 * (1.0 - cost / baseline)


def section_rows(section: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted key, value text) for the scalars and short lists of a plan section; long or
    nested lists are summarised by their length so the table stays readable."""
    if isinstance(section, Mapping):
        for key, value in section.items():
            if key == "traces":
                continue
            yield from section_rows(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(section, list) and (len(section) > 8 or any(
            isinstance(v, (Mapping, list)) for v in section)):
        yield prefix, f"{len(section)} entries"
    else:
        yield prefix, orjson.dumps(section).decode() if isinstance(section, list) else str(section)
