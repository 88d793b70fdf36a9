"""Run the covering stage in-process (or on a Spark driver): build selections per batch, solve
each cover with the plan's solver and time limit, deliver results, and sum up the metrics.

`run_covering(events, section)` takes canonical event columns and the plan's `covering`
section; either engine calls it with the events of the operators' types.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pandas as pd

from cepplan.engine_adapter.runtime.covering import cover_inputs, deliver, groups
from cepplan.planner.covering import CoverSolution, instance, solve
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

QOR = ("precision", "recall", "disparity")


@dataclass(frozen=True)
class CoveringRun:
    """One result per query and window, and the stage's metrics (for `metrics.json`)."""

    results: pd.DataFrame
    metrics: dict[str, Any]


def run_covering(events: pd.DataFrame, section: Mapping[str, Any], *, complexity: int = 1,
                 solver: str | None = None) -> CoveringRun:
    """Evaluate every consumer query with reuse; `solver` overrides the plan's (benchmarks:
    `none` executes every selection, the baseline without reuse)."""
    chosen_solver = solver or section.get("solver", "auto")
    frames, solutions = [], []
    for group in groups(events, section):
        if not group.selections:
            continue
        if chosen_solver == "none":
            assignment: tuple[int, ...] = tuple(range(len(group.selections)))
        else:
            solution = solve_cover(cover_inputs(group, section), group.operator, section,
                                   chosen_solver)
            solutions.append(solution)
            assignment = solution.assignment
        frames.append(deliver(group, assignment, section, complexity))
    return finished_run(frames, solutions, section)


def solve_cover(inputs: tuple[list[set[int]], list[int], list[int]], operator: str,
                section: Mapping[str, Any], solver: str | None = None) -> CoverSolution:
    """One group's cover (`cover_inputs`: who may serve whom, owners, priorities) with the
    plan's solver (or `solver`), time limit and seed, weighted by the operator's cost."""
    serves, owner, priority = inputs
    weight = [float(section["operators"][operator].get("cost", 1.0))] * len(owner)
    return solve(instance(serves, owner, weight, priority),
                 solver or section.get("solver", "auto"),
                 float(section.get("time_limit", 10.0)), int(section.get("seed", 0)))


def finished_run(frames: list[pd.DataFrame], solutions: list[CoverSolution],
                 section: Mapping[str, Any]) -> CoveringRun:
    """The groups' delivered results, in group order, and the stage's metrics."""
    results = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["batch", "operator", "query", "window", "value", "served_by", "reused",
                 *QOR, "meets_thresholds"])
    return CoveringRun(results, covering_metrics(results, solutions, section))


def operator_columns(operator: Mapping[str, Any]) -> list[str]:
    """The canonical columns the stage reads of a consumer operator's events."""
    return list(dict.fromkeys([EVENT_TYPE, EVENT_TS, EVENT_ID, operator["x"], operator["y"],
                               *([operator["attribute"]] if operator.get("attribute") else [])]))


def covering_part(events: pd.DataFrame, section: Mapping[str, Any]) -> pd.DataFrame:
    """The rows of `events` (canonical, e.g. one batch read) the stage reads: the consumer
    operators' types, with their columns."""
    operators = list(section["operators"].values())
    columns = list(dict.fromkeys(c for op in operators for c in operator_columns(op)))
    mine = events[EVENT_TYPE].isin({op["event_type"] for op in operators}).to_numpy(bool)
    return events.loc[mine, columns]


def results_lines(results: pd.DataFrame) -> bytes:
    """The results, one JSON object per query and window, as JSON lines."""
    return b"".join(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
                    for row in results.to_dict(orient="records"))


def covering_metrics(results: pd.DataFrame, solutions: list[CoverSolution],
                     section: Mapping[str, Any]) -> dict[str, Any]:
    """Executions with and without reuse, measured QoR, threshold violations, solver record."""
    costs = {name: float(op.get("cost", 1.0)) for name, op in section["operators"].items()}
    executed = results[~results["reused"].astype(bool)] if len(results) else results
    without = len(results)
    with_reuse = len(executed)
    reused = results[results["reused"].astype(bool)] if len(results) else results
    return {
        "selections": without,
        "executions_without_reuse": without,
        "executions_with_reuse": with_reuse,
        "saved_share": 1 - with_reuse / without if without else 0.0,
        "cost_without_reuse": float(sum(costs[o] for o in results.get("operator", []))),
        "cost_with_reuse": float(sum(costs[o] for o in executed.get("operator", []))),
        "reused_results": len(reused),
        "qor_of_reused": {m: _distribution(reused[m]) for m in QOR} if len(reused) else {},
        "threshold_violations": int((~results["meets_thresholds"].astype(bool)).sum())
        if len(results) else 0,
        "solver": _solver_record(solutions),
    }


def _distribution(values: pd.Series) -> dict[str, float]:
    data = values.to_numpy(dtype=float)
    return {"min": float(data.min()), "p05": float(np.quantile(data, 0.05)),
            "median": float(np.median(data)), "mean": float(data.mean()),
            "max": float(data.max())}


def _solver_record(solutions: list[CoverSolution]) -> dict[str, Any]:
    seconds = [s.seconds for s in solutions]
    gaps = [s.gap for s in solutions if s.gap is not None]
    return {
        "batches_solved": len(solutions),
        "solvers": dict(Counter(s.solver for s in solutions)),
        "statuses": dict(Counter(s.status for s in solutions)),
        "fallbacks": sum(s.status == "fallback" for s in solutions),
        "seconds_total": float(sum(seconds)),
        "seconds_max": float(max(seconds, default=0.0)),
        "largest_gap": float(max(gaps, default=0.0)),
        "choices": sorted({s.reason for s in solutions if s.reason}),
    }
