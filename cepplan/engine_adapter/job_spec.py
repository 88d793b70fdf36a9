"""Workload + plan -> the job's data (`job.json`): patterns as plain JSON, predicates as
portable expression trees (never code), the plan's order and steps, and the arguments of
`cepplan.workload.spark_source.read_events` for the workload's `source`.
"""

from __future__ import annotations

from typing import Any

from cepplan.engine_adapter.runtime.job import FORMAT, job_from_json
from cepplan.engine_adapter.runtime.match_rows import ColumnClash, match_layouts
from cepplan.engine_adapter.runtime.spec import SpecError
from cepplan.errors import InputError
from cepplan.planner.plan import Plan
from cepplan.workload.context_model import job_contexts
from cepplan.workload.expr.portable import to_portable
from cepplan.workload.model import Operand, Pattern, Workload
from cepplan.workload.source_spec import reader_arguments


def job_data(workload: Workload, plan: Plan, *, plan_kind: str = "plan") -> dict[str, Any]:
    """The JSON the generated job reads; checked by the runtime's own reader before use."""
    order = _bottom_up(workload)
    patterns = [_pattern(workload.pattern(name), plan) for name in order]
    types = {name: list(t.attributes) for name, t in workload.event_types.items()}
    types.update({p.name: list(p.emit) for p in workload.patterns})
    data = {
        "format": FORMAT,
        "workload": {"name": workload.name, "path": workload.path, "sha256": workload.digest,
                     "time_unit": workload.time_unit},
        "options": {"seq_ties": workload.options.seq_ties,
                    "kleene_cap": workload.options.kleene_cap,
                    "max_delay": workload.options.max_delay},
        "types": types,
        "reader": None if workload.source is None else reader_arguments(workload),
        "patterns": patterns,
        "contexts": job_contexts(workload, plan.contexts),
        "plan": {"kind": plan_kind, "provenance": dict(plan.provenance),
                 "predicted": {name: {"expected_cost": p.detection.expected_cost,
                                      "naive_cost": p.naive_cost, "solver": p.solver}
                               for name, p in plan.patterns.items()}},
    }
    skips = _after_match(workload)
    if skips:
        data["after_match"] = skips  # applied to the written matches (runtime/after_match.py)
    if plan.covering:
        data["covering"] = dict(plan.covering)  # consumer queries, run by the Spark job
    if plan.sharing:
        data["sharing"] = dict(plan.sharing)  # shared subtrees, run by runtime/shared_plan.py
    try:
        job_from_json(data)
    except SpecError as err:
        raise InputError.single(workload.path or "<workload>", "patterns", str(err)) from None
    return data


def check_parquet_output(workload: Workload, plan: Plan) -> None:
    """`InputError` naming the pattern when its matches cannot be written as Parquet: a
    column the layout adds has the name of an attribute or emitted attribute
    (docs/engine.md, "Matches as Parquet")."""
    try:
        match_layouts(job_from_json(job_data(workload, plan)))
    except ColumnClash as err:
        raise InputError.single(workload.path or "<workload>",
                                f"patterns[{workload.pattern(err.pattern).index}]",
                                err.problem) from None
    for pattern in workload.patterns:
        if pattern.after_match[0] != "any":
            raise InputError.single(workload.path or "<workload>",
                                    f"patterns[{pattern.index}].after_match",
                                    f"{pattern.output_name}'s after-match skip is applied to "
                                    "matches written as JSON lines only: drop --format parquet")
        if pattern.timed_out:
            raise InputError.single(workload.path or "<workload>",
                                    f"patterns[{pattern.index}].timed_out",
                                    f"{pattern.reported_as}'s timed-out partial matches are "
                                    "written as JSON lines only: drop --format parquet")
        if pattern.reported_as:
            raise InputError.single(workload.path or "<workload>",
                                    f"patterns[{pattern.index}].structure",
                                    f"{pattern.reported_as} has alternatives (\"x:A|B\"), whose "
                                    "matches are written as JSON lines only: drop --format "
                                    "parquet")


def _after_match(workload: Workload) -> dict[str, dict[str, Any]]:
    """Per user pattern with an after-match skip: its kind, variable and partition key, and
    its match preference with the variables it ranks by."""
    out = {}
    for pattern in workload.patterns:
        kind, var = pattern.after_match
        if kind != "any":
            prefer, variables = pattern.prefer
            out[pattern.output_name] = {"kind": kind, "var": var,
                                        "partition_by": list(pattern.partition_by),
                                        **({"prefer": prefer, "variables": list(variables)}
                                           if prefer else {})}
    return out


def _bottom_up(workload: Workload) -> list[str]:
    """Pattern names, children first (`bottom_up_order`); without hierarchy that order is
    the names in reverse, found without building the graph (networkx loads slowly)."""
    names = {p.name for p in workload.patterns}
    if not any(o.event_type in names for p in workload.patterns for o in p.operands):
        return sorted(names, reverse=True)
    from cepplan.workload.detection_graph import bottom_up_order, detection_graph

    return bottom_up_order(detection_graph(workload))


def _bounds(operand: Operand) -> dict[str, int]:
    """A KLEENE operand's bounds on its events, when it has any, and whether they follow each
    other in the partition (`strict`)."""
    bounds = {"min": operand.min_count} if operand.min_count > 1 else {}
    bounds |= {"consecutive": True} if operand.consecutive else {}
    return bounds | ({"max": operand.max_count} if operand.max_count is not None else {})


def _pattern(pattern: Pattern, plan: Plan) -> dict[str, Any]:
    chosen = plan.patterns[pattern.name]
    reported = {"reported_as": pattern.reported_as} if pattern.reported_as else {}
    if pattern.timed_out:
        reported["timed_out"] = pattern.timed_out
    return {
        **reported,
        "name": pattern.name,
        "operator": pattern.operator,
        "operands": [{"var": o.var, "type": o.event_type, "kind": o.kind,
                      "position": o.position, **_bounds(o)} for o in pattern.operands],
        "predicates": [{"text": p.text, "tree": p.portable} for p in pattern.predicates],
        "window": pattern.window,
        "partition_by": list(pattern.partition_by),
        "order": list(chosen.order),
        "steps": [sorted(step) for step in chosen.detection.steps],
        "emit": {attr: to_portable(expr) for attr, expr in pattern.emit.items()},
        "emit_types": dict(pattern.emit_types),
        **({"window_events": pattern.window_events} if pattern.window_events else {}),
    }
