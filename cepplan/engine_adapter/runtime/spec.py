"""The matcher's view of a pattern, read from the job's JSON data (never from code).

A pattern spec is plain JSON built by `cepplan.engine_adapter.job_spec` from the workload and
the plan: operands, predicates as portable expression trees, window, key, the plan's evaluation
order and acquisition steps, emitted attributes. `compile_pattern` sorts each predicate into
the stage of the matcher that can evaluate it (see docs/matching.md, "The matcher"):

- `filters[v]`: one variable, plain references only: the candidate events of `v`;
- `joins`: every Kleene variable read only plainly or through `LAST` (its last event stands in
  while joining, seed 001 §2.3 step 2), no negated variable;
- `rest[k]`: Kleene `k` read plainly (every event must satisfy it), no `FIRST`/`NEXT`/`PREV`,
  no other Kleene read per event: a per-event test of `k`'s other events;
- `masks[k]`: `FIRST`/`NEXT`/`PREV` of exactly one Kleene variable: evaluated over the bitmask
  enumeration of `k`'s subsets (seed 001 §2.4);
- `combos`: per-event reads of two or more Kleene variables: checked per combination;
- `negations[x]`: predicates on a negated variable `x` (seed 002 §2.2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PLAIN, KLEENE, NEGATED = "plain", "kleene", "negated"
OPERATORS = ("SEQ", "AND", "OR")
_PER_EVENT = ("plain", "NEXT", "PREV")


class SpecError(ValueError):
    """The job data does not describe a pattern the matcher can run."""


@dataclass(frozen=True)
class OperandSpec:
    """One operand: variable, bound type (primitive or pattern name), kind and SEQ position."""

    var: str
    type: str
    kind: str
    position: int
    min_count: int = 1  # KLEENE: the fewest and most events it binds (0: no most)
    max_count: int = 0
    consecutive: bool = False  # KLEENE: no event of the partition between two of its events

    def size_fits(self, size: int) -> bool:
        """Whether a Kleene binding of `size` events keeps its bounds."""
        return self.min_count <= size and (not self.max_count or size <= self.max_count)


@dataclass(frozen=True)
class PredicateSpec:
    """A predicate: its text (for messages only), portable tree and the references it makes."""

    text: str
    tree: list
    uses: Mapping[str, frozenset[str]]  # var -> {"plain", "FIRST", "LAST", "NEXT", "PREV"}

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(self.uses)


@dataclass(frozen=True)
class PatternSpec:
    """Everything the matcher needs to evaluate one pattern."""

    name: str
    operator: str
    operands: tuple[OperandSpec, ...]
    predicates: tuple[PredicateSpec, ...]
    window: float | None
    partition_by: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    steps: tuple[tuple[str, ...], ...] = ()
    emit: Mapping[str, list] = field(default_factory=dict)
    seq_ties: str = "strict"
    kleene_cap: int = 16
    match_bytes: int = 0  # one match as held until written (`memory.match_bytes`; 0: not set)
    reported_as: str = ""  # the user's pattern this one is an alternative of (alternation)
    timed_out: int = 0  # k > 0: it finds the timed-out partial matches of k events
    window_events: int | None = None  # a count window: positions apart (`positions`)
    writes_all: bool = False  # every match it finds is written (`job.writes_all`)

    @property
    def window_unit(self) -> str:
        """What the window counts, as messages say it."""
        return "events" if self.window_events is not None else "time units"

    @property
    def reach(self) -> float:
        """How far apart a match's first and last events may lie on the window's clock:
        positions for a count window, else time (infinite without a window)."""
        if self.window_events is not None:
            return float(self.window_events)
        return math.inf if self.window is None else self.window

    @property
    def output_name(self) -> str:
        """The name its matches are written under."""
        return self.reported_as or self.name

    def operand(self, var: str) -> OperandSpec:
        for operand in self.operands:
            if operand.var == var:
                return operand
        raise KeyError(var)

    @property
    def positive(self) -> tuple[OperandSpec, ...]:
        return tuple(o for o in self.operands if o.kind != NEGATED)

    @property
    def negated(self) -> tuple[OperandSpec, ...]:
        return tuple(o for o in self.operands if o.kind == NEGATED)

    @property
    def kleene_vars(self) -> frozenset[str]:
        return frozenset(o.var for o in self.operands if o.kind == KLEENE)


def tree_uses(tree: list) -> dict[str, set[str]]:
    """Which variables a portable tree reads, and how (plainly or through a Kleene function)."""
    uses: dict[str, set[str]] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, list) or not node:
            raise SpecError(f"not an expression tree: {node!r:.60}")
        head = node[0]
        if head == "lit":
            continue
        if head == "attr":
            uses.setdefault(_name(node[1]), set()).add("plain")
        elif head == "kleene":
            if node[1] not in ("FIRST", "LAST", "NEXT", "PREV"):
                raise SpecError(f"unknown Kleene function {node[1]!r:.40}")
            uses.setdefault(_name(node[2]), set()).add(node[1])
        else:
            stack.extend(node[2:] if head == "call" else node[1:])
    return uses


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise SpecError(f"not a name: {value!r:.60}")
    return value


def pattern_from_json(data: Mapping[str, Any], *, seq_ties: str = "strict",
                      kleene_cap: int = 16) -> PatternSpec:
    """Read one pattern's job data, checking its shape (the data is never executed)."""
    operator = data["operator"]
    if operator not in OPERATORS:
        raise SpecError(f"unknown operator {operator!r:.40}")
    operands = tuple(
        OperandSpec(_name(o["var"]), _name(o["type"]), o["kind"], int(o["position"]),
                    int(o.get("min", 1)), int(o.get("max", 0)), o.get("consecutive") is True)
        for o in data["operands"])
    if any(o.kind not in (PLAIN, KLEENE, NEGATED) for o in operands):
        raise SpecError("an operand kind must be plain, kleene or negated")
    predicates = tuple(
        PredicateSpec(str(p["text"]), p["tree"],
                      {v: frozenset(u) for v, u in tree_uses(p["tree"]).items()})
        for p in data.get("predicates", ()))
    window = data.get("window")
    emit = {_name(k): v for k, v in (data.get("emit") or {}).items()}
    for tree in emit.values():
        tree_uses(tree)
    return PatternSpec(
        name=_name(data["name"]), operator=operator, operands=operands, predicates=predicates,
        window=None if window is None else float(window),
        partition_by=tuple(_name(k) for k in data.get("partition_by", ())),
        order=tuple(_name(v) for v in data.get("order") or [o.var for o in operands]),
        steps=tuple(tuple(_name(v) for v in s) for s in data.get("steps", ())),
        emit=emit, seq_ties=seq_ties, kleene_cap=int(kleene_cap),
        reported_as=_name(data["reported_as"]) if data.get("reported_as") else "",
        timed_out=int(data.get("timed_out", 0)),
        window_events=int(data["window_events"]) if data.get("window_events") else None)


@dataclass
class Stages:
    """A pattern's predicates sorted by the matcher stage that evaluates them (module doc)."""

    filters: dict[str, list[list]] = field(default_factory=dict)
    joins: list[PredicateSpec] = field(default_factory=list)
    rest: dict[str, list[PredicateSpec]] = field(default_factory=dict)
    masks: dict[str, list[PredicateSpec]] = field(default_factory=dict)
    combos: list[PredicateSpec] = field(default_factory=list)
    negation_filters: dict[str, list[list]] = field(default_factory=dict)
    negations: dict[str, list[PredicateSpec]] = field(default_factory=dict)
    # (x, y) -> the negations saying no event of the partition lies between (`contiguity`)
    contiguous: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)


def compile_pattern(spec: PatternSpec) -> Stages:
    """Assign every predicate of a pattern to its stages; reject what the matcher cannot run."""
    stages = Stages()
    kleene = spec.kleene_vars
    negated = {o.var for o in spec.negated}
    known = {o.var for o in spec.operands}
    if spec.window is None and spec.window_events is None and kleene:
        raise SpecError(f"pattern {spec.name}: a KLEENE operand needs a window (\"within\")")
    if sorted(spec.order) != sorted(known):
        raise SpecError(f"pattern {spec.name}: the plan's order must list each variable once")
    for pred in spec.predicates:
        unknown = pred.variables - known
        if unknown:
            raise SpecError(f"pattern {spec.name}: predicate {pred.text!r:.60} reads unknown "
                            f"variable(s) {sorted(unknown)}")
        negs = pred.variables & negated
        if len(negs) > 1:
            raise SpecError(f"pattern {spec.name}: predicate {pred.text!r:.60} reads two negated "
                            "variables; each NOT is checked on its own")
        if negs:
            (var,) = negs
            if pred.variables == {var}:
                stages.negation_filters.setdefault(var, []).append(pred.tree)
            else:
                stages.negations.setdefault(var, []).append(pred)
            continue
        if len(pred.variables) == 1 and pred.uses[next(iter(pred.variables))] == {"plain"}:
            (var,) = pred.variables
            stages.filters.setdefault(var, []).append(pred.tree)
            continue
        per_event = {v for v in pred.variables & kleene
                     if pred.uses[v] & {"plain", "FIRST", "NEXT", "PREV"}}
        ordered = any(pred.uses[v] & {"FIRST", "NEXT", "PREV"} for v in pred.variables)
        if not ordered:
            stages.joins.append(pred)  # holds for the last events: a necessary condition
        if len(per_event) >= 2:
            stages.combos.append(pred)
        elif len(per_event) == 1:
            (var,) = per_event
            target = stages.masks if ordered else stages.rest
            target.setdefault(var, []).append(pred)
    return stages
