"""The plan model and `plan.json` (format doc, "plan.json"; seed 002 §3.1).

A multi-step detection plan is an ordered list of steps, each a set of the pattern's variables
monitored together: step 1 is pushed continuously, later steps are pulled within the window once
the earlier steps have matched. Its latency is its number of steps. `order` is the evaluation
order the matcher joins the variables in. Sections for multi-pattern sharing, contexts and
covering are added by the issues that build them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

import cepplan
from cepplan.errors import InputError, Problem
from cepplan.fileio import read_json, write_json_atomic
from cepplan.schema_check import schema_problems, shipped_schema
from cepplan.workload.model import Pattern, Workload

FORMAT = "cepplan.plan/1"
SECTIONS = ("contexts", "sharing", "covering", "invariants")  # what later passes add
CONTENT_DIGEST = "plan_sha256"  # of `patterns` and SECTIONS as the planner wrote them
MODELLED_TOTALS = ("total_expected_cost", "naive_total_cost", "independent_total_expected_cost")


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
    contexts: Mapping[str, Any] | None = None  # the contexts pass (docs/contexts.md)
    sharing: Mapping[str, Any] | None = None  # the evaluation pass (docs/sharing.md)
    covering: Mapping[str, Any] | None = None  # the covering pass (docs/covering.md)
    invariants: Mapping[str, Any] | None = None  # the invariants pass (docs/planner.md)

    def to_json(self) -> dict[str, Any]:
        body = {
            "format": FORMAT,
            "workload": {"path": self.workload_path, "sha256": self.workload_digest},
            "patterns": {name: p.to_json() for name, p in self.patterns.items()},
            "provenance": {"cepplan": cepplan.__version__, **self.provenance},
        }
        for name in SECTIONS:
            section = getattr(self, name)
            if section:
                body[name] = dict(section)
        return {**body, CONTENT_DIGEST: content_digest(body)}


def content_digest(document: Mapping[str, Any]) -> str:
    """sha256 of a plan document's planned content — `patterns` (steps, orders, trees and
    their modelled costs) and the sections of the later passes — as canonical JSON (keys
    sorted, values as JSON reads them back): recorded when the plan is written, compared when
    it is read, so an edited plan is never shown with the figures modelled for its original."""
    planned = {name: document[name] for name in ("patterns", *SECTIONS) if name in document}
    plain = orjson.loads(orjson.dumps(planned, option=orjson.OPT_SERIALIZE_NUMPY))
    return hashlib.sha256(orjson.dumps(plain, option=orjson.OPT_SORT_KEYS)).hexdigest()


def unmodelled(plan: Plan) -> Plan:
    """The plan as written without the planner's modelled figures (costs, Pareto fronts,
    modelled latencies, shared nodes' and grouped windows' costs, expected active shares):
    what runs for a plan whose figures cannot be trusted to belong to its steps. Its
    invariants go too: they were derived for the plan as written."""
    patterns = {name: replace(p, detection=replace(p.detection, expected_cost=None,
                                                   modelled_latency=None),
                              pareto=(), naive_cost=None) for name, p in plan.patterns.items()}
    provenance = {k: v for k, v in plan.provenance.items() if k not in MODELLED_TOTALS}
    sharing = plan.sharing and {
        **_without(plan.sharing, ("modelled_cost", "trace")),
        "shared": _each_without_cost(plan.sharing.get("shared"))}
    contexts = plan.contexts and {
        **_without(plan.contexts, ("expected_active_share",)),
        "groups": _each_without_cost(plan.contexts.get("groups"))}
    return replace(plan, patterns=MappingProxyType(patterns),
                   provenance=MappingProxyType(provenance), sharing=sharing, contexts=contexts,
                   invariants=None)


def _without(section: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in section.items() if k not in keys}


def _each_without_cost(entries: Any) -> Any:
    """Shared nodes or grouped windows with their modelled cost unknown (`cost`,
    `expected_cost`); a malformed section as it was, for the readers that check it."""
    if not isinstance(entries, list):
        return entries
    return [{**e, **{k: None for k in ("cost", "expected_cost") if k in e}}
            if isinstance(e, dict) else e for e in entries]


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


def read_plan(path: str | Path, workload: Workload | None = None,
              notes: list[str] | None = None) -> Plan:
    """Read `plan.json`; with a workload, check that every pattern and variable fits it. A
    plan whose content does not match its `plan_sha256` (edited, or written before plans
    recorded it) is read `unmodelled`, the sentence saying so appended to `notes`."""
    return plan_from_json(read_json(path), str(path), workload, notes)


def plan_from_json(raw: Any, file: str, workload: Workload | None = None,
                   notes: list[str] | None = None) -> Plan:
    """A plan document already parsed (from a file or a request body) as `read_plan` reads
    it; `file` names it in errors and notes."""
    problems: list[tuple[str, str]] = []
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InputError.single(file, "format", f"not a cepplan plan (expected \"{FORMAT}\")")
    shape = schema_problems(raw, shipped_schema("cepplan.planner", "plan.schema.json"), file)
    if shape:  # checked before use: a list or a string where an object belongs is one error
        raise InputError(shape)
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
    plan = Plan(MappingProxyType(patterns), meta.get("path", ""), meta.get("sha256", ""),
                MappingProxyType({k: v for k, v in (raw.get("provenance") or {}).items()
                                  if k != "cepplan"}),
                **{name: raw.get(name) for name in SECTIONS})
    recorded = raw.get(CONTENT_DIGEST)
    if recorded == content_digest(raw):
        return plan
    if notes is not None:
        why = ("was changed after `cepplan optimize` wrote it (its content no longer matches "
               f"{CONTENT_DIGEST})" if recorded else "records no digest of its content "
               f"({CONTENT_DIGEST}: written by an older cepplan, or by hand)")
        notes.append(f"{file}: the plan {why}: it runs as written, without the modelled costs, "
                     "which may belong to other steps; run `cepplan optimize` again to have "
                     "them")
    return unmodelled(plan)


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
