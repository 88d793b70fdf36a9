"""The validated, immutable workload model that every other subsystem reads.

Built only by `cepplan.workload.loader` from a `workload.json` (format doc, "workload.json,
format 1"); windows and durations are already converted to the workload's `time_unit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from cepplan.workload.expr.ast import Expr
from cepplan.workload.expr.portable import to_portable


def _empty() -> Mapping:
    return MappingProxyType({})


PLAIN, KLEENE, NEGATED = "plain", "kleene", "negated"
FILTER, JOIN, KLEENE_INTERNAL = "filter", "join", "kleene"


@dataclass(frozen=True)
class EventType:
    """A primitive event type: its attribute schema and, optionally, the attribute naming its
    region (for per-region statistics, seed 002 §5.2)."""

    name: str
    attributes: Mapping[str, str]
    region: str | None = None


@dataclass(frozen=True)
class Source:
    """How rows of an event file become events (format doc, "source")."""

    format: str
    header: bool = True
    columns: tuple[str, ...] | None = None
    type_column: str | None = None
    fixed_type: str | None = None
    time_column: str = "ts"
    time_format: str | None = None
    id_column: str | None = None
    key_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Operand:
    """One operand of a pattern's operator: a variable bound to a primitive type or a pattern."""

    var: str
    event_type: str
    kind: str  # PLAIN, KLEENE or NEGATED
    position: int  # index among the operator's operands (SEQ order)
    is_complex: bool  # bound to another pattern (a complex subevent)
    # alternation ("x:BUY|SELL"): every type the variable may bind, in the order written; the
    # loader expands the pattern into one core pattern per choice, `event_type` being this one's
    alternatives: tuple[str, ...] = ()
    optional: bool = False  # ["OPTIONAL", leaf]: a match may leave it unbound (optional.py)
    min_count: int = 1  # KLEENE: the fewest and most events it binds (None: no bound)
    max_count: int | None = None
    consecutive: bool = False  # KLEENE under `strict`: its events follow each other, back to back


@dataclass(frozen=True)
class Predicate:
    """One `where` entry: its text as written, typed tree, variables and class."""

    text: str
    expr: Expr
    variables: frozenset[str]
    kind: str  # FILTER (one variable), JOIN (two or more), KLEENE_INTERNAL (NEXT/PREV)
    index: int

    @cached_property
    def portable(self) -> list:
        """The JSON-list form evaluated by the Spark runtime."""
        return to_portable(self.expr)


@dataclass(frozen=True)
class Latency:
    """A detection latency bound: plan steps (seed 002 §3.1) and/or time."""

    max_steps: int | None = None
    max_time: float | None = None


@dataclass(frozen=True)
class Pattern:
    """A complex event: an operator over operands, predicates, key, window and latency bound."""

    name: str
    operator: str  # SEQ, AND or OR
    operands: tuple[Operand, ...]
    predicates: tuple[Predicate, ...]
    window: float | None  # in time_unit; None only for OR and count windows
    partition_by: tuple[str, ...] = ()
    latency: Latency | None = None
    contexts: tuple[str, ...] = ()
    emit: Mapping[str, Expr] = field(default_factory=_empty)
    emit_types: Mapping[str, str] = field(default_factory=_empty)
    weight: float = 1.0
    index: int = 0
    # selection strategy, for all pairs or per later variable; already rewritten (strategies.py)
    strategy: str | Mapping[str, str] = "any"
    # the user's pattern this core pattern is one alternative of (alternation.py), else ""
    reported_as: str = ""
    # after-match skip (after_match.py): (kind, variable or ""); applied to the user's pattern
    after_match: tuple[str, str] = ("any", "")
    # match preference (after_match.py): "greedy", "reluctant" or "" (none), and the user's
    # pattern's positive variables in order, which it ranks matches by
    prefer: tuple[str, tuple[str, ...]] = ("", ())
    # k > 0: a hidden pattern finding the user's pattern's timed-out partial matches of its
    # first k events (timed_out.py); 0 for every other pattern
    timed_out: int = 0
    window_events: int | None = None  # a count window: positions apart (count_windows.py)

    @property
    def output_name(self) -> str:
        """The name its matches are reported under: the user's pattern's."""
        return self.reported_as or self.name

    @cached_property
    def variables(self) -> tuple[str, ...]:
        return tuple(o.var for o in self.operands)

    @cached_property
    def positive(self) -> tuple[Operand, ...]:
        """Operands that must occur (not negated)."""
        return tuple(o for o in self.operands if o.kind != NEGATED)

    @cached_property
    def negated(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.kind == NEGATED)

    @cached_property
    def kleene_vars(self) -> frozenset[str]:
        return frozenset(o.var for o in self.operands if o.kind == KLEENE)

    def operand(self, var: str) -> Operand:
        for operand in self.operands:
            if operand.var == var:
                return operand
        raise KeyError(var)

    def filters(self, var: str) -> tuple[Predicate, ...]:
        """Filter predicates on one variable (pushed down to acquisition, seed 002 §5.2)."""
        return tuple(p for p in self.predicates if p.kind == FILTER and p.variables == {var})


@dataclass(frozen=True)
class ContextTransition:
    """A context deriving pattern and its action (seed 003 §3)."""

    on: str
    action: str  # initiate, switch, terminate
    context: str | None = None
    source: str | None = None  # "from" of a switch
    target: str | None = None  # "to" of a switch


@dataclass(frozen=True)
class Contexts:
    """Application contexts: the patterns active per context type (seed 003)."""

    initial: str
    types: Mapping[str, tuple[str, ...]]
    transitions: tuple[ContextTransition, ...] = ()
    partition_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConsumerOperator:
    """An aggregate over the events of one type inside a region (seed 000)."""

    name: str
    event_type: str
    aggregate: str
    attribute: str | None
    x: str
    y: str
    cost: float = 1.0  # relative cost of one execution (covering weighs executions by it)


@dataclass(frozen=True)
class ConsumerQuery:
    """A consumer's query: operator, interest region, window and quality thresholds."""

    id: str
    operator: str
    region: tuple[float, float, float, float]
    window_count: int | None
    window_time: float | None
    precision: float
    recall: float
    disparity: float | None
    track: tuple[tuple[float, float, float], ...] = ()  # (t, x, y) focal points, t ascending


@dataclass(frozen=True)
class Consumers:
    """Consumer queries that may share selections under quality thresholds (seed 000)."""

    operators: Mapping[str, ConsumerOperator]
    queries: tuple[ConsumerQuery, ...]
    neighbors_k: int | None = None
    neighbors_distance: float | None = None
    batch_time: float | None = None


@dataclass(frozen=True)
class OccurrenceModel:
    """How an event type occurs per time step: Poisson, Bernoulli or an m-th order Markov chain
    (seed 002 §4, §4.2). `transition[state][1]` = P(event next step | last m steps = state)."""

    kind: str
    p: float | None = None
    order: int | None = None
    time_step: float | None = None
    transition: tuple[tuple[float, float], ...] | None = None


@dataclass(frozen=True)
class KeyedStatistics:
    """A partitioned pattern's events over its keys (`stats.json`'s `keyed`, docs/stats.md):
    key classes (number of keys, mean count per type over `span` time units) and, measured
    within a key, the share of each variable's events covered by each set of the others and
    the candidate tuples per time unit of each set of variables (empty when not measured)."""

    keys: int
    span: float
    classes: tuple[tuple[int, Mapping[str, float]], ...]
    coverage: Mapping[str, Mapping[frozenset[str], float]] = field(default_factory=_empty)
    tuples: Mapping[frozenset[str], float] = field(default_factory=_empty)


@dataclass(frozen=True)
class Statistics:
    """Rates (events per time_unit), selectivities (pattern -> predicate text -> fraction) and
    occurrence models, from the workload or a `stats.json`; for partitioned patterns, how their
    events spread over the keys (`keyed`, from a `stats.json` only)."""

    rates: Mapping[str, float] = field(default_factory=_empty)
    selectivities: Mapping[str, Mapping[str, float]] = field(default_factory=_empty)
    models: Mapping[str, OccurrenceModel] = field(default_factory=_empty)
    keyed: Mapping[str, KeyedStatistics] = field(default_factory=_empty)


@dataclass(frozen=True)
class Options:
    """Workload-wide options: SEQ tie handling, the runtime's Kleene subset cap, and how far
    a live stream's arrivals may lag behind event time (docs/engine.md, "Live streams")."""

    seq_ties: str = "strict"
    kleene_cap: int = 16
    max_delay: float = 0.0


@dataclass(frozen=True)
class Workload:
    """A whole validated workload."""

    name: str
    time_unit: str
    event_types: Mapping[str, EventType]
    patterns: tuple[Pattern, ...]
    options: Options = field(default_factory=Options)
    source: Source | None = None
    contexts: Contexts | None = None
    consumers: Consumers | None = None
    statistics: Statistics = field(default_factory=Statistics)
    path: str = ""
    # sha256 of the workload's canonical JSON (loader.content_digest): ties plans, statistics
    # and jobs to the workload they fit, however it was written or sent
    digest: str = ""
    file_digest: str = ""  # sha256 of the file's bytes, which older plans and stats recorded

    def made_for(self, digest: str) -> bool:
        """Whether a plan or statistics recording `digest` were made for this workload: its
        content digest, or the digest of its file's bytes that older versions recorded."""
        return bool(digest) and digest in (self.digest, self.file_digest)

    @cached_property
    def patterns_by_name(self) -> Mapping[str, Pattern]:
        return MappingProxyType({p.name: p for p in self.patterns})

    def pattern(self, name: str) -> Pattern:
        return self.patterns_by_name[name]

    def is_complex(self, type_name: str) -> bool:
        return type_name in self.patterns_by_name

    def attributes_of(self, type_name: str) -> Mapping[str, str]:
        """Attributes of a primitive type, or the emitted attributes of a pattern."""
        if type_name in self.event_types:
            return self.event_types[type_name].attributes
        return self.patterns_by_name[type_name].emit_types
