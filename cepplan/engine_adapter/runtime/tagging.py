"""Which pattern variables each event can bind: type and filter push-down (seed 001 step 1).

Runs over a pandas batch of canonical events (in the Spark job, inside `mapInPandas`) and
tags every row with `pattern<TAB>var` for each variable whose type and filter predicates it
satisfies; the acquisition semi-joins and the matchers read only tagged rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cepplan.engine_adapter.runtime.contiguity import timeline_column
from cepplan.engine_adapter.runtime.job import Job
from cepplan.engine_adapter.runtime.table import Columns, values
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

if TYPE_CHECKING:
    import pandas as pd

TAGS = "__vars"


def tag(pattern: str, var: str) -> str:
    """The tag naming one variable of one pattern."""
    return f"{pattern}\t{var}"


def tag_masks(frame: pd.DataFrame | Columns, job: Job) -> dict[str, np.ndarray]:
    """Per variable tag, which rows of `frame` qualify (type and filter predicates)."""
    masks: dict[str, np.ndarray] = {}
    plain = isinstance(frame, Columns)
    types = None if plain else frame[EVENT_TYPE]  # a Series: fast when it is categorical
    for spec in job.patterns:
        stages = job.stages[spec.name]
        stamped = (set().union(*stages.contiguous.values())
                   if timeline_column(spec.partition_by) in frame.columns else set())
        for operand in spec.operands:
            if operand.var in stamped:
                masks[tag(spec.name, operand.var)] = np.zeros(len(frame), dtype=bool)
                continue  # the events' stamps stand for it (`contiguity`)
            rows = np.flatnonzero(frame.type_mask(operand.type) if plain else
                                  (types == operand.type).to_numpy(dtype=bool))
            filters = (stages.negation_filters if operand.kind == "negated"
                       else stages.filters).get(operand.var, [])
            if not len(rows):  # no row of its type: the frame may lack its attributes
                filters = []
            for tree in filters:
                columns = {key: _values(frame, key[1])[rows] for key in referenced_keys(tree)}
                rows = rows[np.asarray(evaluate(tree, columns, len(rows)), dtype=bool)]
            mask = np.zeros(len(frame), dtype=bool)
            mask[rows] = True
            masks[tag(spec.name, operand.var)] = mask
    return masks


def tag_frame(frame: pd.DataFrame, job: Job) -> pd.DataFrame:
    """`frame` with a `__vars` column: the list of variable tags each row qualifies for."""
    tags: list[list[str]] = [[] for _ in range(len(frame))]
    for label, mask in tag_masks(frame, job).items():
        for row in np.flatnonzero(mask):
            tags[row].append(label)
    out = frame.copy()
    out[TAGS] = tags
    return out


def _values(frame: pd.DataFrame | Columns, attr: str) -> np.ndarray:
    return values(frame, EVENT_TS if attr == "ts" else attr)
