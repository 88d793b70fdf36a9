"""Load `workload.json` into a validated, immutable `Workload`.

Two passes, each reporting every problem it finds: the JSON Schema shipped with the package
checks shape (jsonschema: a maintained validator with precise paths, better than hand-written
shape checks), then `_Builder` checks meaning (types, variables, attributes, predicates,
windows, cycles) while it builds the model; the other sections are checked by `sections` and
`statistics_section`, whose problems it gathers with its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from cepplan.errors import InputError, Problem, json_path
from cepplan.file_kinds import check_kind
from cepplan.fileio import parse_json, read_input
from cepplan.workload.after_match import after_match_problem, prefer_problem, read_after_match
from cepplan.workload.alternation import MAX_CHOICES, choice_count, choices
from cepplan.workload.context_model import context_issues
from cepplan.workload.count_windows import (
    CountWindowError,
    count_window_problem,
    is_count_window,
    parse_count_window,
)
from cepplan.workload.durations import SECONDS_PER_UNIT, DurationError, parse_duration
from cepplan.workload.expr.ast import Attr, KleeneRef, walk
from cepplan.workload.expr.errors import ExprError
from cepplan.workload.expr.parser import parse
from cepplan.workload.expr.typecheck import VarInfo, check_predicate, type_of
from cepplan.workload.model import (
    FILTER,
    JOIN,
    KLEENE,
    KLEENE_INTERNAL,
    NEGATED,
    EventType,
    Latency,
    Operand,
    Options,
    Pattern,
    Predicate,
    Statistics,
    Workload,
)
from cepplan.workload.names import RESERVED_ATTRIBUTES, RULE, is_name
from cepplan.workload.optional import without
from cepplan.workload.sections import read_consumers, read_contexts, read_source
from cepplan.workload.statistics_section import read_statistics
from cepplan.workload.strategies import apply_strategy, strategy_problem
from cepplan.workload.structure import RawOperand, read_structure
from cepplan.workload.timed_out import timed_out_patterns, timed_out_problem


@lru_cache(maxsize=1)
def workload_schema() -> dict[str, Any]:
    """The JSON Schema of workload format 1, as shipped in the package."""
    text = resources.files("cepplan.workload").joinpath("workload.schema.json").read_text()
    return json.loads(text)


def load_workload(path: str | Path) -> Workload:
    """Read, validate and build a workload; raise `InputError` listing every problem."""
    path = Path(path)
    data = read_input(path)
    try:
        raw = parse_json(data, path)
    except InputError as err:
        raise InputError([replace(p, message=f"expected a workload.json, but this is "
                                  f"{p.message}") for p in err.problems]) from None
    return build_workload(raw, file=str(path), file_digest=hashlib.sha256(data).hexdigest())


def build_workload(raw: Any, *, file: str = "<workload>", file_digest: str = "") -> Workload:
    """Validate an already-parsed workload document and build the model (`file_digest`: the
    sha256 of the bytes it was read from, when it was read from a file)."""
    problems = schema_problems(raw, file)
    if problems:
        raise InputError(problems)
    builder = _Builder(raw, file)
    workload = builder.build(content_digest(raw), file_digest)
    if builder.problems:
        raise InputError(builder.problems)
    errors = [Problem(file, i.path, i.message) for i in context_issues(workload) if i.error]
    if errors:
        raise InputError(errors)
    return workload


def content_digest(raw: Any) -> str:
    """sha256 of a workload's canonical JSON (keys sorted, no whitespace, strings as UTF-8,
    whole numbers written as integers): the same for the same content, whether read from a
    file however formatted, rewritten by a JSON tool (`jq` writes `1.0` as `1`) or sent to
    the service."""
    return hashlib.sha256(orjson.dumps(_whole_as_int(raw),
                                       option=orjson.OPT_SORT_KEYS)).hexdigest()


def _whole_as_int(value: Any) -> Any:
    """`value` with every float that is a whole number (below 2^53, where floats are exact)
    as an int: the workload means the same by `1` and `1.0`."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_as_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_as_int(v) for v in value]
    return value


def schema_problems(raw: Any, file: str) -> list[Problem]:
    """Every JSON Schema violation, each with its JSON path, in plain words; a plan or a
    statistics file is told so in one line instead."""
    if not isinstance(raw, dict):
        return [Problem(file, "", "a workload must be a JSON object")]
    try:
        check_kind(raw, file, "workload")
    except InputError as err:
        return list(err.problems)
    from cepplan.schema_check import schema_problems as shape_problems

    return shape_problems(raw, workload_schema(), file)


class _Builder:
    """Checks the meaning of a schema-valid workload while building its model."""

    def __init__(self, raw: dict[str, Any], file: str):
        self.raw = raw
        self.file = file
        self.problems: list[Problem] = []
        self.time_unit: str = raw["time_unit"]
        self.alternating: set[str] = set()  # patterns expanded into core patterns
        self.counting: set[str] = set()  # patterns with a count window: none may bind them

    def error(self, path: tuple, message: str, excerpt: str = "") -> None:
        problem = Problem(self.file, json_path(path), message, excerpt)
        if problem not in self.problems:  # each alternative of a pattern finds the same
            self.problems.append(problem)

    def duration(self, value: Any, path: tuple) -> float | None:
        try:
            return parse_duration(value, self.time_unit)
        except DurationError as err:
            self.error(path, str(err))
            return None

    def max_delay(self, value: Any) -> float:
        """`options.max_delay`: zero or a duration; a bare number over a day in the time unit
        is refused (a unit slip, e.g. ms read as s) unless written with its unit."""
        if value == 0 and not isinstance(value, bool):
            return 0.0
        amount = self.duration(value, ("options", "max_delay"))
        if amount is None:
            return 0.0
        if not isinstance(value, str) and amount * SECONDS_PER_UNIT[self.time_unit] > 86400:
            self.error(("options", "max_delay"),
                       f"{value!r:.40} {self.time_unit} is more than a day: write it with its "
                       "unit (e.g. '36h') if a stream's arrivals can lag that far")
            return 0.0
        return amount

    # -- whole document -------------------------------------------------------------------

    def build(self, digest: str, file_digest: str = "") -> Workload:
        event_types = self.event_types()
        pattern_names = self.pattern_names(event_types)
        order = self.pattern_order(pattern_names, event_types)
        patterns = self.patterns(order, event_types, pattern_names)
        options = self.raw.get("options", {})
        workload = Workload(
            name=self.raw.get("name", ""),
            time_unit=self.time_unit,
            event_types=MappingProxyType(event_types),
            patterns=tuple(patterns),
            options=Options(options.get("seq_ties", "strict"), options.get("kleene_cap", 16),
                            self.max_delay(options.get("max_delay", 0))),
            source=read_source(self.raw.get("source"), event_types, self.error),
            contexts=read_contexts(self.raw, pattern_names, self.error),
            consumers=read_consumers(self.raw.get("consumers"), event_types, self.error,
                                     self.duration),
            statistics=self.statistics(event_types, patterns, pattern_names),
            path=self.file,
            digest=digest,
            file_digest=file_digest,
        )
        return workload

    def event_types(self) -> dict[str, EventType]:
        schemas = self.raw.get("schemas", {})
        for name, attrs in schemas.items():
            self.attribute_names(attrs, ("schemas", name))
        types = {}
        for name, spec in self.raw["event_types"].items():
            path = ("event_types", name)
            if not is_name(name):  # reported here once; references to it resolve
                self.error(path, f"{name!r} is not a valid event type name ({RULE})")
            if ("schema" in spec) == ("attributes" in spec):
                self.error(path, "give exactly one of \"schema\" (a name) or \"attributes\"")
                continue
            if "schema" in spec:
                if spec["schema"] not in schemas:
                    known = ", ".join(sorted(schemas)) or "none"
                    self.error((*path, "schema"), f"unknown schema {spec['schema']!r} "
                               f"(schemas: {known})")
                    continue
                attrs = schemas[spec["schema"]]
            else:
                attrs = spec["attributes"]
                self.attribute_names(attrs, (*path, "attributes"))
            region = spec.get("region")
            if region is not None and region not in attrs:
                self.error((*path, "region"), f"region attribute {region!r} is not an attribute "
                           f"of {name}")
            types[name] = EventType(name, MappingProxyType(dict(attrs)), region)
        return types

    def attribute_names(self, attrs: Mapping[str, str], path: tuple) -> None:
        for attr in attrs:
            if not is_name(attr) or attr.startswith("__"):
                self.error((*path, attr), f"{attr!r} is not a valid attribute name ({RULE}; "
                           "not starting with '__')")
            elif attr == "id" and (self.raw.get("source") or {}).get("id_column") == "id":
                if attrs[attr] != "long":  # the events' own ids, read as an attribute too
                    self.error((*path, attr), "'id' is source.id_column, the events' ids: "
                               "declare it long")
            elif attr in RESERVED_ATTRIBUTES:
                self.error((*path, attr), f"{attr!r} is reserved: {RESERVED_ATTRIBUTES[attr]}")

    def pattern_names(self, event_types: Mapping[str, EventType]) -> dict[str, int]:
        names: dict[str, int] = {}
        for index, spec in enumerate(self.raw["patterns"]):
            name = spec["name"]
            if not is_name(name):  # the schema's pattern is looser (Python's \w)
                self.error(("patterns", index, "name"), f"{name!r} is not a valid pattern "
                           f"name ({RULE})")
            if name in names:
                self.error(("patterns", index, "name"), f"pattern name {name!r} is already used "
                           f"by patterns[{names[name]}]")
            elif name in event_types:
                self.error(("patterns", index, "name"), f"pattern name {name!r} is also a "
                           "primitive event type; names must differ")
            else:
                names[name] = index
        return names

    def pattern_order(self, names: Mapping[str, int], event_types: Mapping) -> list[int]:
        """Pattern indices with every pattern after the patterns it binds; cycles are errors."""
        edges = []
        for name, index in names.items():
            _, operands, _ = read_structure(self.raw["patterns"][index]["structure"])
            edges += [(o.type_name, name) for o in operands if o.type_name in names]
        if not edges:  # no pattern binds another: file order (networkx not even imported)
            return sorted(names.values())
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(names)
        graph.add_edges_from(edges)
        cyclic: set[str] = set()
        for component in nx.strongly_connected_components(graph):
            if len(component) > 1 or any(graph.has_edge(n, n) for n in component):
                cycle = [u for u, _ in nx.find_cycle(graph.subgraph(component))]
                text = " -> ".join([*cycle, cycle[0]])
                first = min(component, key=names.__getitem__)
                self.error(("patterns", names[first], "structure"),
                           f"patterns form a cycle: {text}")
                cyclic |= component
        acyclic = graph.subgraph(n for n in graph if n not in cyclic)
        return [names[n] for n in nx.lexicographical_topological_sort(acyclic, key=names.get)]

    # -- patterns -------------------------------------------------------------------------

    def patterns(self, order: list[int], event_types: Mapping[str, EventType],
                 names: Mapping[str, int]) -> list[Pattern]:
        built: dict[int, list[Pattern]] = {}
        by_name: dict[str, Pattern] = {}
        for index in order:
            core = self.pattern(index, event_types, names, by_name)
            if core:
                built[index] = core
                by_name.update((p.name, p) for p in core)
        return [p for i in sorted(built) for p in built[i]]

    def pattern(self, index: int, event_types: Mapping[str, EventType],
                names: Mapping[str, int], done: Mapping[str, Pattern]) -> list[Pattern]:
        """The pattern's core patterns: itself, or one per choice of its alternatives
        (alternation.py); none when it is invalid (reported)."""
        spec = self.raw["patterns"][index]
        path = ("patterns", index)
        before = len(self.problems)
        operator, raw_operands, structure_errors = read_structure(spec["structure"])
        for err in structure_errors:
            self.error((*path, "structure", *err.path), err.message)
        operands = self.operands(raw_operands, event_types, names, done, path)
        if operands is None or len(self.problems) > before:
            return []
        if choice_count(operands) > 1:
            self.alternation_checks(spec, operands, names, path)
            if len(self.problems) > before:
                return []
            self.alternating.add(spec["name"])
        if is_count_window(spec.get("within")):
            self.counting.add(spec["name"])
        core = []
        for name, chosen, absent in choices(spec["name"], operands):
            pattern = self.core_pattern(spec, index, name, operator, chosen, event_types, done)
            if pattern is not None:
                pattern = without(pattern, absent)  # None: no match leaves them unbound
            if pattern is not None:
                core.append(self.with_strategy(pattern, event_types, path))
        if spec.get("timed_out") and core and core[0] is not None:
            core += self.timed_out(spec, core[0], names, path)
        return [] if len(self.problems) > before else [p for p in core if p is not None]

    def timed_out(self, spec: Mapping[str, Any], pattern: Pattern,
                  names: Mapping[str, int], path: tuple) -> list[Pattern]:
        """The hidden patterns finding the pattern's timed-out partial matches (timed_out.py);
        none when it cannot have them (reported)."""
        problem = timed_out_problem(pattern, spec.get("strategy", "any"), "contexts" in self.raw)
        if problem:
            self.error((*path, "timed_out"), problem)
            return []
        hidden = timed_out_patterns(pattern)
        for p in hidden:
            if p.name in names:
                self.error((*path, "timed_out"), f"its timed-out partial matches are planned as "
                           f"pattern {p.name!r}, a name patterns[{names[p.name]}] already has")
        return hidden

    def alternation_checks(self, spec: Mapping[str, Any], operands: list[Operand],
                           names: Mapping[str, int], path: tuple) -> None:
        """Report what a pattern with alternatives or optional variables cannot have: too many
        choices, a name one of its core patterns would take, contexts (which name patterns one
        by one) or `emit` (no other pattern can bind it)."""
        count = choice_count(operands)
        if count > MAX_CHOICES:
            self.error((*path, "structure"), f"its alternatives and optional variables make "
                       f"{count} core patterns, more than {MAX_CHOICES}: split the pattern")
        for name, _, _ in choices(spec["name"], operands):
            if name in names and names[name] != path[1]:
                self.error((*path, "name"), f"its alternatives are planned as pattern {name!r},"
                           f" a name patterns[{names[name]}] already has")
        if "contexts" in self.raw:
            self.error((*path, "structure"), "alternatives (\"x:A|B\") and OPTIONAL are not "
                       "supported in a workload with contexts")
        if spec.get("emit"):
            self.error((*path, "emit"), "a pattern with alternatives (\"x:A|B\") or OPTIONAL "
                       "cannot be bound by another pattern, so it has nothing to emit")

    def core_pattern(self, spec: Mapping[str, Any], index: int, name: str, operator: str,
                     operands: list[Operand], event_types: Mapping[str, EventType],
                     done: Mapping[str, Pattern]) -> Pattern | None:
        """One core pattern over `operands` (its types chosen); None when invalid (reported)."""
        path = ("patterns", index)
        before = len(self.problems)
        variables = {o.var: VarInfo(o.event_type, self.attrs(o.event_type, event_types, done),
                                    o.kind == KLEENE, o.kind == NEGATED) for o in operands}
        predicates = self.predicates(spec.get("where", []), variables, operator, path)
        window, window_events = None, None
        if is_count_window(spec.get("within")):
            window_events = self.count_window(spec, operator, operands, path)
        elif "within" in spec:
            window = self.duration(spec["within"], (*path, "within"))
        elif operator != "OR" and (len(operands) > 1 or any(o.kind == KLEENE for o in operands)):
            self.error(path, f"a {operator} pattern needs a window: add \"within\", e.g. \"5min\"")
        partition_by = tuple(spec.get("partition_by", ()))
        for attr in partition_by:
            missing = [o.var for o in operands if attr not in variables[o.var].attributes]
            if missing:
                self.error((*path, "partition_by"), f"partition attribute {attr!r} is missing "
                           f"from the type of {', '.join(missing)}")
        emit, emit_types = self.emit(spec.get("emit", {}), variables, path)
        after_match = read_after_match(spec.get("after_match", "any"))
        problem = after_match_problem(after_match, operator, operands)
        if problem is None and after_match[0] != "any" and "contexts" in self.raw:
            problem = ("after_match is not supported in a workload with contexts, whose "
                       "windows are derived from every match")
        if problem is None and after_match[0] != "any" and spec.get("timed_out"):
            problem = ("after_match is not supported with \"timed_out\": true (whether a "
                       "partial match times out would depend on the matches skipped)")
        if problem:
            self.error((*path, "after_match"), problem)
        prefer = spec.get("prefer", "")
        problem = prefer_problem(prefer, after_match, operator) if prefer else None
        if problem:
            self.error((*path, "prefer"), problem)
        ordered = tuple(o.var for o in sorted(operands, key=lambda o: o.position)
                        if o.kind != NEGATED)
        if len(self.problems) > before:
            return None
        pattern = Pattern(
            name=name, operator=operator, operands=tuple(operands),
            predicates=tuple(predicates), window=window, window_events=window_events,
            partition_by=partition_by,
            latency=self.latency(spec.get("latency"), (*path, "latency")),
            contexts=tuple(spec.get("contexts", ())),
            emit=MappingProxyType(emit), emit_types=MappingProxyType(emit_types),
            weight=float(spec.get("weight", 1.0)), index=index,
            strategy=_frozen(spec.get("strategy", "any")),
            reported_as="" if name == spec["name"] else spec["name"], after_match=after_match,
            prefer=(prefer, ordered if prefer else ()),
        )
        return pattern

    def count_window(self, spec: Mapping[str, Any], operator: str, operands: list[Operand],
                     path: tuple) -> int | None:
        """The pattern's count window (`count_windows`), or None when it cannot be read or
        the pattern has what a count window cannot be combined with (reported)."""
        place = (*path, "within")
        try:
            count = parse_count_window(spec["within"])
        except CountWindowError as err:
            self.error(place, str(err))
            return None
        problem = count_window_problem(operator, operands, bool(self.raw.get("contexts")),
                                       bool(spec.get("emit")))
        if problem:
            self.error(place, problem)
            return None
        return count

    def with_strategy(self, pattern: Pattern, event_types: Mapping[str, EventType],
                      path: tuple) -> Pattern | None:
        """The pattern rewritten for its selection strategy (strategies.py), or None when the
        strategy cannot apply to it (reported)."""
        problem = strategy_problem(pattern)
        if problem:
            place, message = problem
            self.error((*path, "strategy", *([place] if place else [])), message)
            return None
        ties = self.raw.get("options", {}).get("seq_ties", "strict") == "allow"
        return apply_strategy(pattern, dict(event_types), ties)

    def attrs(self, type_name: str, event_types: Mapping[str, EventType],
              done: Mapping[str, Pattern]) -> Mapping[str, str]:
        if type_name in event_types:
            return event_types[type_name].attributes
        return done[type_name].emit_types

    def operands(self, raw: list[RawOperand], event_types: Mapping[str, EventType],
                 names: Mapping[str, int], done: Mapping[str, Pattern],
                 path: tuple) -> list[Operand] | None:
        """The resolved operands, or None when one binds a pattern that is itself invalid
        (its own problems are reported where it is defined, not repeated here)."""
        seen: dict[str, tuple] = {}
        blocked = False
        operands = []
        for position, item in enumerate(raw):
            where = (*path, "structure", *item.path)
            if item.var in seen:
                self.error(where, f"variable {item.var!r} is bound twice "
                           f"(first at {json_path((*path, 'structure', *seen[item.var]))})")
                continue
            seen[item.var] = item.path
            unknown = [t for t in item.alternatives if t not in event_types]
            if unknown:
                self.error(where, f"alternatives of {item.var!r} must be primitive event types, "
                           f"not {', '.join(map(repr, unknown))}")
                continue
            if item.type_name in event_types:
                complex_ = False
            elif item.type_name in self.counting:
                self.error(where, f"pattern {item.type_name!r} has a count window (\"within\": "
                           "\"N events\"): another pattern cannot bind it")
                continue
            elif item.type_name in self.alternating:
                self.error(where, f"pattern {item.type_name!r} has alternatives (\"x:A|B\") "
                           "or OPTIONAL: another pattern cannot bind it")
                continue
            elif item.type_name in names:
                if item.type_name not in done:
                    blocked = True
                    continue
                if done[item.type_name].after_match[0] != "any":
                    self.error(where, f"pattern {item.type_name!r} has an after_match skip, "
                               "applied to its matches as written: another pattern cannot "
                               "bind it")
                    continue
                complex_ = True
            else:
                self.error(where, f"unknown event type {item.type_name!r}: neither a primitive "
                           "type in event_types nor a pattern name")
                continue
            if item.optional and complex_:
                self.error(where, "OPTIONAL applies to a primitive event type, not pattern "
                           f"{item.type_name!r}")
                continue
            operands.append(Operand(item.var, item.type_name, item.kind, position, complex_,
                                    item.alternatives, item.optional, item.min_count,
                                    item.max_count))
        return None if blocked else operands

    def predicates(self, texts: list[str], variables: Mapping[str, VarInfo], operator: str,
                   path: tuple) -> list[Predicate]:
        predicates = []
        for index, text in enumerate(texts):
            where = (*path, "where", index)
            try:
                expr = parse(text)
                check_predicate(expr, variables)
            except ExprError as err:
                self.error(where, err.message, err.caret(text))
                continue
            used = frozenset(n.var if isinstance(n, Attr) else n.ref.var
                             for n in walk(expr) if isinstance(n, (Attr, KleeneRef)))
            internal = any(isinstance(n, KleeneRef) and n.func in ("NEXT", "PREV")
                           for n in walk(expr))
            if not used:
                self.error(where, "a predicate must refer to at least one variable")
                continue
            negated = sorted(v for v in used if variables[v].negated)
            if len(negated) > 1:
                self.error(where, "a predicate may refer to one negated variable only, not "
                           f"{', '.join(negated)}: each NOT is checked on its own")
                continue
            if operator == "OR" and len(used) > 1:
                self.error(where, "in an OR pattern a predicate may refer to one variable only: "
                           "a match holds just one operand")
                continue
            kind = KLEENE_INTERNAL if internal else (FILTER if len(used) == 1 else JOIN)
            predicates.append(Predicate(text, expr, used, kind, index))
        return predicates

    def emit(self, spec: Mapping[str, str], variables: Mapping[str, VarInfo],
             path: tuple) -> tuple[dict, dict]:
        emit, types = {}, {}
        for attr, text in spec.items():
            where = (*path, "emit", attr)
            if not is_name(attr) or attr.startswith("__") or attr == "ts":
                self.error(where, f"{attr!r} cannot be an emitted attribute name")
                continue
            try:
                expr = parse(text)
                attr_type = type_of(expr, variables)
                _check_emit_refs(expr, variables)
            except ExprError as err:
                self.error(where, err.message, err.caret(text))
                continue
            emit[attr], types[attr] = expr, attr_type
        return emit, types

    def latency(self, spec: Mapping[str, Any] | None, path: tuple) -> Latency | None:
        if spec is None:
            return None
        steps = spec.get("max_steps")
        if steps is not None and steps < 1:
            self.error((*path, "max_steps"),
                       f"a latency bound must be at least 1 step, got {steps}")
        max_time = None
        if "max_time" in spec:
            max_time = self.duration(spec["max_time"], (*path, "max_time"))
        return Latency(steps, max_time)

    def statistics(self, event_types: Mapping[str, EventType], patterns: list[Pattern],
                   declared: Collection[str]) -> Statistics:
        spec = self.raw.get("statistics", {})
        by_name = {p.output_name: p for p in reversed(patterns)}  # a user's name: its first
        statistics = read_statistics(spec, event_types, by_name, self.time_unit, self.error,
                                     ("statistics",), declared)
        given = statistics.selectivities
        selectivities = {p.name: given[p.output_name] for p in patterns if p.output_name in given}
        return replace(statistics, selectivities=MappingProxyType(selectivities))


def _frozen(strategy: str | dict[str, str]) -> str | Mapping[str, str]:
    return strategy if isinstance(strategy, str) else MappingProxyType(dict(strategy))


def _check_emit_refs(expr, variables: Mapping[str, VarInfo]) -> None:
    for node in walk(expr):
        if isinstance(node, KleeneRef) and node.func in ("NEXT", "PREV"):
            raise ExprError("an emitted attribute cannot use NEXT/PREV", node.pos)
        if isinstance(node, Attr) and node.var in variables:
            info = variables[node.var]
            if info.negated:
                raise ExprError(f"'{node.var}' is negated: it has no event to read", node.pos)
            if info.kleene and not _inside_kleene_ref(expr, node):
                raise ExprError(f"'{node.var}' is KLEENE: use FIRST({node.var}.{node.attr}) "
                                f"or LAST({node.var}.{node.attr})", node.pos)


def _inside_kleene_ref(expr, target) -> bool:
    return any(isinstance(n, KleeneRef) and n.ref is target for n in walk(expr))



