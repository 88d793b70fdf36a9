"""What acquisition steps cost in time on each engine, beside the events they save.

Seed 002 (§3.3, §4) prices a plan by the events it transmits; an engine also pays for the
steps themselves (docs/planner.md, "What a step costs on each engine"). Per run of D time
units, a multi-step plan of a pattern instead of its one-step plan changes the run's time by

    ΔT = − row · (naive − cost) · D  +  test · tested · D

(naive, cost: events per time unit sent to the matchers by the one-step and the chosen plan;
tested: events per time unit of the variables of steps after the first, each tested against
its anchors), and a run with any multi-step plan pays `run` seconds once (none on either
engine now: the Spark job's range-local plan runs the in-process semi-joins in its tasks).
A plan is kept only when it saves more than it costs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineCosts:
    """Seconds per event sent to the matchers, per event tested in a later step, and per run
    with any multi-step plan (measured: docs/planner.md says how)."""

    row: float
    test: float
    run: float


LOCAL = EngineCosts(row=1.0e-6, test=0.35e-6, run=0.0)
SPARK_CORES = 2  # local[*] on the machine the Spark figures were measured on
ENGINE_COSTS = {
    # in-process: matcher input (table building, joins) vs one NumPy semi-join per tested event
    "local": LOCAL,
    # Spark's range-local plan: the in-process stages in every task, the tasks spread over the
    # cores; no extra job for the steps (the shuffle plan's old prices: docs/planner.md)
    "spark": EngineCosts(row=LOCAL.row / SPARK_CORES, test=LOCAL.test / SPARK_CORES, run=0.0),
}


def step_saving(costs: EngineCosts, naive: float, cost: float, tested: float) -> float:
    """Seconds per time unit a multi-step plan saves over the one-step plan (negative: it
    costs more than it saves)."""
    return costs.row * (naive - cost) - costs.test * tested


def pays_for_run(costs: EngineCosts, savings: float, duration: float | None) -> bool:
    """Whether multi-step plans saving `savings` seconds per time unit in all repay the run's
    fixed cost over `duration` time units (unknown duration: a long run, they do)."""
    return duration is None or savings * duration > costs.run
