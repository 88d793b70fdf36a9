"""What acquisition steps cost in time on each engine, beside the events they save.

Seed 002 (§3.3, §4) prices a plan by the events it transmits; an engine also pays for the
steps themselves (docs/planner.md, "What a step costs on each engine"). Per run of D time
units, a multi-step plan of a pattern instead of its one-step plan changes the run's time by

    ΔT = − row · (naive − cost) · D  +  test · tested · D  +  join · (rows − one_rows) · D

(naive, cost: events per time unit sent to the matchers by the one-step and the chosen plan;
tested: events per time unit of the variables of steps after the first, each tested against
its anchors; rows, one_rows: rows per time unit the matcher's look-ups read in the join order
each plan gives, `costmodels.join_orders`), and a run with any multi-step plan pays `run`
seconds once (none on either engine now: the Spark job's range-local plan runs the
in-process semi-joins in its tasks). A plan is kept only when it saves more than it costs.
"""

from __future__ import annotations

from dataclasses import dataclass

# seconds per row a join look-up reads in the in-process matcher: range expansion, the events'
# ranks gathered and a condition evaluated per row (NumPy; measured as docs/planner.md says)
JOIN_ROW = 0.05e-6


@dataclass(frozen=True)
class EngineCosts:
    """Seconds per event sent to the matchers, per event tested in a later step, per run
    with any multi-step plan and per row a join look-up reads (measured: docs/planner.md
    says how)."""

    row: float
    test: float
    run: float
    join: float


LOCAL = EngineCosts(row=1.0e-6, test=0.35e-6, run=0.0, join=JOIN_ROW)
SPARK_CORES = 2  # local[*] on the machine the Spark figures were measured on
ENGINE_COSTS = {
    # in-process: matcher input (table building, joins) vs one NumPy semi-join per tested event
    "local": LOCAL,
    # Spark's range-local plan: the in-process stages in every task, the tasks spread over the
    # cores; no extra job for the steps (the shuffle plan's old prices: docs/planner.md)
    "spark": EngineCosts(row=LOCAL.row / SPARK_CORES, test=LOCAL.test / SPARK_CORES, run=0.0,
                         join=LOCAL.join / SPARK_CORES),
}


def step_saving(costs: EngineCosts, naive: float, cost: float, tested: float,
                extra_rows: float = 0.0) -> float:
    """Seconds per time unit a multi-step plan saves over the one-step plan (negative: it
    costs more than it saves); `extra_rows`: rows per time unit its join order reads beyond
    the one-step plan's."""
    return costs.row * (naive - cost) - costs.test * tested - costs.join * extra_rows


def pays_for_run(costs: EngineCosts, savings: float, duration: float | None) -> bool:
    """Whether multi-step plans saving `savings` seconds per time unit in all repay the run's
    fixed cost over `duration` time units (unknown duration: a long run, they do)."""
    return duration is None or savings * duration > costs.run
