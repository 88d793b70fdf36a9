"""What acquisition steps cost in time on each engine, beside the events they save.

Seed 002 (§3.3, §4) prices a plan by the events it transmits; an engine also pays for the
steps themselves (docs/planner.md, "What a step costs on each engine"). Per run of D time
units, a multi-step plan of a pattern instead of its one-step plan changes the run's time by

    ΔT = − row · (naive − cost) · D  +  test · tested · D

(naive, cost: events per time unit sent to the matchers by the one-step and the chosen plan;
tested: events per time unit of the variables of steps after the first, each tested against
its anchors). The engine keeps a later step's event when, for each earlier variable, one of
its kept events of the same key lies within the window on the side the SEQ order allows; it
does not test the join predicates, so `cost` is priced by `engine_shares`, not by the
acquisition model (which counts only the partial matches that pass them). A run with any
multi-step plan pays `run` seconds once (none on either engine now: the Spark job's
range-local plan runs the in-process semi-joins in its tasks). A plan is kept only when it
saves more than it costs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cepplan.costmodels.operators import SEQ, PatternModel, pulled_fraction


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


def engine_shares(model: PatternModel, steps: Sequence[frozenset[str]]) -> dict[str, float]:
    """Per variable, the share of its events the engine's acquisition keeps under `steps`:
    1 in the first step; later, the product over the earlier positive variables of the
    chance that one of their kept events lies within reach (W on the SEQ side, 2W for AND):
    `anchored`."""
    shares: dict[str, float] = {}
    done: list[str] = []
    for index, step in enumerate(steps):
        for var in step:
            shares[var] = 1.0 if index == 0 else math.prod(
                anchored(model, var, anchor, shares[anchor]) for anchor in done)
        done += [v for v in step if not model.operand(v).negated]
    return shares


def anchored(model: PatternModel, var: str, anchor: str, kept: float) -> float:
    """The chance that an event of `var` has one of the `kept` share of `anchor`'s events
    within reach: the acquisition model's figure for `anchor` alone (no join predicate
    binds one variable; within keys where the statistics give it; an expected count where
    it assumes Poisson events), at most the Poisson chance over all keys merged."""
    reach = model.window if model.operator == SEQ else 2.0 * model.window
    poisson = 1.0 - math.exp(-model.operand(anchor).occurrence.rate * kept * reach)
    return min(poisson, kept * pulled_fraction(model, var, frozenset({anchor})))
