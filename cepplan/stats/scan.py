"""What a statistics engine hands the shared summarisation (`collect.py`): the two tables only
a pass over the events can give. The engines (`spark_scan.py`, `local_scan.py`) differ only in
how they compute them; every figure of `stats.json` is then derived from them in NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pandas as pd

from cepplan.stats.step_counts import OrderedSteps

COUNT = "__n"  # counts (attribute names cannot begin with "__")
STEP = "__step"


@dataclass(frozen=True)
class SampleBlocks:
    """The events one pattern's selectivities are measured on: its primitive `types` in the
    blocks `floor(__ts / length)` whose seeded hash is under `threshold`, or in all blocks when
    `threshold` is None (`block_sample.py`)."""

    types: tuple[str, ...]
    length: float
    threshold: int | None
    seed: int


@dataclass
class StepCounts:
    """The per-step table cut by type: rejected rows per (`__reject`, `__type`) in `__n` (a
    missing type as NULL), and per valid type name, in name order, its occupied steps."""

    rejected: pd.DataFrame
    per_type: dict[str, OrderedSteps]


class EventScan(Protocol):
    """One statistics engine over one set of event files."""

    engine: str  # "local" or "spark"
    versions: dict[str, str]  # of the libraries it ran on, for provenance

    def step_counts(self, time_step: float, presample: list[SampleBlocks]
                    ) -> pd.DataFrame | StepCounts:
        """Rows per (`__reject` reason, `__type`, time step `floor(__ts / time_step)`) in
        column `__n`, the step NULL for rejected rows (or that table cut by type already).
        The engine may gather the valid rows of `presample`'s blocks meanwhile, for
        `groups_and_sample`."""
        ...

    def groups_and_sample(self, blocks: list[SampleBlocks], group_columns: list[str],
                          attributes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Valid rows counted per (`__type`, *group_columns) in `__n` (NULL groups kept);
        and the valid rows inside any of `blocks` with `__type`, `__ts`, `__id`, the group
        columns and `attributes` (cut from the rows gathered for `presample` when those
        cover `blocks`, else read again)."""
        ...
