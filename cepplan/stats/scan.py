"""What a statistics engine hands the shared summarisation (`collect.py`): the two tables only
a pass over the events can give. The engines (`spark_scan.py`, `local_scan.py`) differ only in
how they compute them; every figure of `stats.json` is then derived from them in NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pandas as pd

COUNT = "__n"  # counts (attribute names cannot begin with "__")
STEP = "__step"


@dataclass(frozen=True)
class SampleBlocks:
    """The events one pattern's selectivities are measured on: its primitive `types` in the
    blocks of `length` time units (counted from the first observed step) listed in `chosen`,
    or in all blocks when `chosen` is None."""

    types: tuple[str, ...]
    length: float
    chosen: tuple[int, ...] | None


class EventScan(Protocol):
    """One statistics engine over one set of event files."""

    engine: str  # "local" or "spark"
    versions: dict[str, str]  # of the libraries it ran on, for provenance

    def step_counts(self, time_step: float) -> pd.DataFrame:
        """Rows per (`__reject` reason, `__type`, time step `floor(__ts / time_step)`) in
        column `__n`; the step is NULL for rejected rows."""
        ...

    def groups_and_sample(self, blocks: list[SampleBlocks], group_columns: list[str],
                          attributes: list[str],
                          t_first: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Valid rows counted per (`__type`, *group_columns) in `__n` (NULL groups kept);
        and the valid rows inside any of `blocks` (block index `floor((__ts - t_first) / length)`)
        with `__type`, `__ts`, `__id`, the group columns and `attributes`."""
        ...
