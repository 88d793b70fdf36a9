"""The plan model and `plan.json` (format doc, "plan.json"; seed 002 §3.1).

A multi-step detection plan is an ordered list of steps, each a set of the pattern's variables
monitored together: step 1 is pushed continuously, later steps are pulled within the window once
the earlier steps have matched. Its latency is its number of steps. `order` is the evaluation
order the matcher joins the variables in. Sections for multi-pattern sharing, contexts and
covering are added by the issues that build them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import cepplan
from cepplan.errors import InputError, Problem
from cepplan.fileio import read_json, write_json_atomic
from cepplan.workload.model import Pattern, Workload

FORMAT = "cepplan.plan/1"


@dataclass(frozen=True)
class DetectionPlan:
    """Ordered steps of variables; `expected_cost` in events per time_unit (None: not modelled).

    `modelled_latency`, when the planner sets it, is the latency its model derived (seed 002
    §4.1: a SEQ counts steps from the one holding its last subevent; complex subevents add
    their own latency); otherwise the latency is the number of steps."""

    steps: tuple[frozenset[str], ...]
    expected_cost: float | None = None
    modelled_latency: int | None = None

    def __post_init__(self) -> None:
        if self.modelled_latency == len(self.steps):  # one spelling per plan: equal plans equal
            object.__setattr__(self, "modelled_latency", None)

    @property
    def latency(self) -> int:
        """Detection latency in plan steps (seed 002 §3.1)."""
        return len(self.steps) if self.modelled_latency is None else self.modelled_latency

    def to_json(self) -> dict[str, Any]:
        return {"steps": [sorted(step) for step in self.steps],
                "expected_cost": self.expected_cost, "latency": self.latency}


@dataclass(frozen=True)
class PatternPlan:
    """The chosen plan of one pattern, its Pareto front and what the naive plan would cost."""

    pattern: str
    detection: DetectionPlan
    order: tuple[str, ...]
    pareto: tuple[DetectionPlan, ...] = ()
    naive_cost: float | None = None
    solver: str = "trivial"
    tree: Any = None  # evaluation tree (docs/sharing.md): a variable or [left, right]

    def to_json(self) -> dict[str, Any]:
        body = {"detection": self.detection.to_json(),
                "pareto": [p.to_json() for p in self.pareto],
                "naive_cost": self.naive_cost, "solver": self.solver, "order": list(self.order)}
        if self.tree is not None:
            body["tree"] = self.tree
        return body


@dataclass(frozen=True)
class Plan:
    """A whole plan: one `PatternPlan` per pattern, the workload it fits, and provenance."""

    patterns: Mapping[str, PatternPlan]
    workload_path: str = ""
    workload_digest: str = ""
    provenance: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    sharing: Mapping[str, Any] | None = None  # the evaluation pass's section (docs/sharing.md)

    def to_json(self) -> dict[str, Any]:
        body = {
            "format": FORMAT,
            "workload": {"path": self.workload_path, "sha256": self.workload_digest},
            "patterns": {name: p.to_json() for name, p in self.patterns.items()},
            "provenance": {"cepplan": cepplan.__version__, **self.provenance},
        }
        if self.sharing is not None:
            body["sharing"] = dict(self.sharing)
        return body


def trivial_pattern_plan(pattern: Pattern) -> PatternPlan:
    """One step monitoring every variable, joined in the order the pattern lists them."""
    step = DetectionPlan((frozenset(pattern.variables),))
    return PatternPlan(pattern.name, step, pattern.variables, (step,), None, "trivial")


def trivial_plan(workload: Workload) -> Plan:
    """The naive push-everything plan for every pattern: the unoptimised baseline."""
    plans = {p.name: trivial_pattern_plan(p) for p in workload.patterns}
    return Plan(MappingProxyType(plans), workload.path, workload.digest,
                MappingProxyType({"solver": "trivial", "seed": None, "seconds": 0.0}))


def write_plan(plan: Plan, path: str | Path) -> None:
    """Write `plan.json` atomically."""
    write_json_atomic(path, plan.to_json())


def read_plan(path: str | Path, workload: Workload | None = None) -> Plan:
    """Read `plan.json`; with a workload, check that every pattern and variable fits it."""
    file = str(path)
    raw = read_json(path)
    problems: list[tuple[str, str]] = []
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InputError.single(file, "format", f"not a cepplan plan (expected \"{FORMAT}\")")
    patterns = {}
    for name, body in (raw.get("patterns") or {}).items():
        try:
            patterns[name] = _pattern_plan(name, body)
        except (KeyError, TypeError, ValueError) as exc:
            problems.append((f"patterns.{name}", f"malformed pattern plan: {exc}"))
    if workload is not None:
        problems += plan_mismatches(patterns, workload)
    if problems:
        raise InputError([Problem(file, path_, message) for path_, message in problems])
    meta = raw.get("workload") or {}
    return Plan(MappingProxyType(patterns), meta.get("path", ""), meta.get("sha256", ""),
                MappingProxyType({k: v for k, v in (raw.get("provenance") or {}).items()
                                  if k != "cepplan"}), raw.get("sharing"))


def plan_mismatches(patterns: Mapping[str, PatternPlan], workload: Workload) -> list[tuple]:
    """(path, message) for every way a plan does not fit a workload."""
    problems = []
    for name in workload.patterns_by_name:
        if name not in patterns:
            problems.append((f"patterns.{name}", f"the workload's pattern {name!r} has no plan"))
    for name, plan in patterns.items():
        pattern = workload.patterns_by_name.get(name)
        if pattern is None:
            problems.append((f"patterns.{name}", f"the workload has no pattern {name!r}"))
            continue
        variables = set(pattern.variables)
        planned = [v for step in plan.detection.steps for v in step]
        if sorted(planned) != sorted(variables):
            problems.append((f"patterns.{name}.detection.steps",
                             f"steps must cover each variable of {name} once "
                             f"({', '.join(sorted(variables))}), got {sorted(planned)}"))
        if sorted(plan.order) != sorted(variables):
            problems.append((f"patterns.{name}.order",
                             f"order must list each variable of {name} once"))
    return problems


def _pattern_plan(name: str, body: Mapping[str, Any]) -> PatternPlan:
    detection = _detection(body["detection"])
    order = tuple(body.get("order") or sorted({v for s in detection.steps for v in s}))
    return PatternPlan(name, detection, order,
                       tuple(_detection(p) for p in body.get("pareto", ())),
                       body.get("naive_cost"), body.get("solver", "unknown"), body.get("tree"))


def _detection(body: Mapping[str, Any]) -> DetectionPlan:
    steps = tuple(frozenset(str(v) for v in step) for step in body["steps"])
    if not steps or any(not step for step in steps):
        raise ValueError("a plan needs at least one step and no empty step")
    cost = body.get("expected_cost")
    latency = body.get("latency")
    return DetectionPlan(steps, None if cost is None else float(cost),
                         None if latency is None else int(latency))
