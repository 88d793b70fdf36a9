"""Re-planning a workload when its statistics drift (docs/planner.md, "Re-planning"): the new
plan, what changed, and the modelled gain of switching — the old plan priced under the new
statistics beside the new one. A re-plan that cannot be made is refused and the caller keeps
the old plan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from cepplan.errors import CepplanError, InputError, Problem, json_path
from cepplan.planner.candidates import Candidate
from cepplan.planner.compose import Settings
from cepplan.planner.deadline import TimeLimitTooShort
from cepplan.planner.evaluation import NONE, EvaluationSettings
from cepplan.planner.optimize import optimize
from cepplan.planner.plan import Plan, plan_from_json
from cepplan.planner.shared import evaluate_total
from cepplan.workload.model import Statistics, Workload
from cepplan.workload.statistics_section import merge_statistics, read_statistics

KEPT = "the old plan is kept"


class ReplanRefused(InputError):
    """No new plan can be made: the old plan has no invariants or cannot be read, or no plan
    meets the workload's latency bounds under the new statistics. The caller keeps the old
    plan; `message` says so, `problems` name each place (one, at `file` and `path`, unless
    given)."""

    def __init__(self, message: str, file: str = "plan", path: str = "",
                 problems: list[Problem] | tuple[Problem, ...] = ()):
        self.message = message
        super().__init__(problems or [Problem(file, path, message)])


@dataclass(frozen=True)
class Replanned:
    """The new plan, per changed pattern what changed, and the modelled costs under the new
    statistics (the workload total, events sent per time unit): the old plan's, the new
    plan's and their ratio."""

    plan: Plan
    changes: list[str]
    old_cost: float
    new_cost: float
    gain: float


def replan(workload: Workload, old_plan: dict, statistics: Statistics, *,
           time_limit: float | None = None, seed: int = 0,
           plan_file: str = "plan") -> Replanned:
    """Plan `workload` again under `statistics` (entry by entry over those the old plan was
    made from) with the old plan's settings, within `time_limit` seconds (the old plan's
    when None); deterministic for a seed. ReplanRefused when it cannot be done; `plan_file`
    names the old plan in errors."""
    try:
        old = plan_from_json(old_plan, plan_file, workload)
    except InputError as exc:
        raise ReplanRefused(f"the plan cannot be read ({_reasons(exc.problems)}): {KEPT}",
                            problems=exc.problems) from None
    invariants = old_plan.get("invariants")
    if not isinstance(invariants, Mapping) or old.invariants is None:
        raise ReplanRefused("the plan records no invariants (it was made by an older cepplan, "
                            f"or edited): it cannot be re-planned and {KEPT}; run `cepplan "
                            "optimize` again to have them", plan_file, "invariants")
    if not workload.made_for(old.workload_digest):
        raise ReplanRefused(f"the plan was made for another workload: {KEPT}", plan_file,
                            "workload.sha256")
    new_statistics = merge_statistics(merge_statistics(workload.statistics,
                                                       _basis(workload, invariants, plan_file)),
                                      statistics)
    settings = _settings(old, time_limit, seed)
    try:
        made = optimize(workload, new_statistics, settings,
                        evaluation_settings=_evaluation(old, settings),
                        engine=_steps_record(old).get("engine", "local"),
                        duration=_steps_record(old).get("duration"))
    except TimeLimitTooShort as exc:
        raise ReplanRefused(f"{exc.advice(settings.time_limit)}: {KEPT}", plan_file) from None
    except InputError as exc:
        raise ReplanRefused(f"no plan can be made under the new statistics "
                            f"({_reasons(exc.problems)}): {KEPT}", plan_file) from None
    except CepplanError as exc:
        raise ReplanRefused(f"{exc}: {KEPT}", plan_file) from None
    results = made.outcome.results
    old_chosen = {name: Candidate(p.detection.steps, 0.0, p.detection.latency, {})
                  for name, p in old.patterns.items()}
    old_cost, _ = evaluate_total(workload, results, old_chosen)
    new_cost = made.outcome.total
    gain = old_cost / new_cost if new_cost > 0 else 1.0
    return Replanned(made.plan, plan_changes(old, made.plan), old_cost, new_cost, gain)


def _basis(workload: Workload, invariants: Mapping[str, Any], plan_file: str) -> Statistics:
    """The statistics the old plan was made from, checked as the workload's own are (known
    types and patterns, rates within the planner's limit)."""
    problems: list[Problem] = []

    def error(where: tuple, message: str) -> None:
        problems.append(Problem(plan_file, json_path(("invariants", "basis", *where)), message))

    basis = read_statistics(invariants["basis"], workload.event_types,
                            workload.patterns_by_name, workload.time_unit, error)
    if problems:
        reasons = _reasons(problems)
        raise ReplanRefused(f"the statistics the plan records it was made from are not "
                            f"the planner's ({reasons}): {KEPT}", problems=problems)
    return basis


def _reasons(problems: tuple[Problem, ...] | list[Problem]) -> str:
    return "; ".join(p.message for p in problems)


def plan_changes(old: Plan, new: Plan) -> list[str]:
    """Per pattern whose steps or join order changed, one line saying how."""
    changes = []
    for name, after in new.patterns.items():
        before = old.patterns.get(name)
        if before is None:
            continue
        parts = []
        if before.detection.steps != after.detection.steps:
            parts.append(f"steps {_steps(before.detection.steps)} became "
                         f"{_steps(after.detection.steps)}")
        if before.order != after.order:
            parts.append(f"join order {', '.join(before.order)} became "
                         f"{', '.join(after.order)}")
        if parts:
            changes.append(f"{name}: {'; '.join(parts)}")
    return changes


def _steps(steps: tuple[frozenset[str], ...]) -> str:
    """`r -> l,w`: the variables of each step, in the order the steps run."""
    return " -> ".join(",".join(sorted(step)) for step in steps)


def _settings(old: Plan, time_limit: float | None, seed: int) -> Settings:
    """The acquisition settings the old plan was made with, with this time limit and seed."""
    recorded = old.provenance.get("settings")
    known = {f.name for f in fields(Settings)}
    given = {k: v for k, v in (recorded or {}).items() if k in known} \
        if isinstance(recorded, Mapping) else {}
    settings = Settings(**given)
    return Settings(**{**given, "seed": seed,
                       "time_limit": settings.time_limit if time_limit is None else time_limit})


def _evaluation(old: Plan, settings: Settings) -> EvaluationSettings:
    """The evaluation search the old plan ran (none if it ran none), in this time limit."""
    search = (old.sharing or {}).get("search")
    if not isinstance(search, Mapping):
        return EvaluationSettings(search=NONE)
    return EvaluationSettings(search.get("algorithm", "tabu"),
                              search.get("neighborhood", "edge"), settings.time_limit,
                              settings.seed, sharing=search.get("sharing", "subtree"))


def _steps_record(old: Plan) -> Mapping[str, Any]:
    record = old.provenance.get("engine_steps")
    return record if isinstance(record, Mapping) else {}

