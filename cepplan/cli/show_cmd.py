"""`cepplan show WORKLOAD`: the normalised workload as a newcomer would want to read it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cepplan.terminal import echo

if TYPE_CHECKING:
    from cepplan.workload import Workload


def show(workload: Path = typer.Argument(..., metavar="WORKLOAD",
                                         help="The workload.json to show.")) -> None:
    """Print event types, patterns (variables, windows, predicates) and the detection graph."""
    from cepplan.workload import load_workload

    for line in describe(load_workload(workload)):
        echo(line, lines=False)


def describe(workload: Workload) -> list[str]:
    """The lines `cepplan show` prints."""
    from cepplan.workload.detection_graph import (
        bottom_up_order,
        detection_graph,
        render_tree,
        shared_subevents,
    )
    from cepplan.workload.expr.printer import to_text

    lines = [f"workload {workload.name or '(unnamed)'}  time unit: {workload.time_unit}  "
             f"SEQ ties: {workload.options.seq_ties}", "", "event types:"]
    for event_type in workload.event_types.values():
        attrs = ", ".join(f"{k}:{v}" for k, v in event_type.attributes.items())
        region = f"  region: {event_type.region}" if event_type.region else ""
        rate = workload.statistics.rates.get(event_type.name)
        rate_text = f"  rate: {rate:g}/{workload.time_unit}" if rate is not None else ""
        lines.append(f"  {event_type.name}({attrs}){region}{rate_text}")
    lines += ["", "patterns:"]
    for pattern in workload.patterns:
        operands = ", ".join(_operand(o) for o in pattern.operands)
        if pattern.timed_out:  # a hidden pattern: listed under its user pattern, above it
            lines.append(f"    timed-out partial matches of {pattern.timed_out} event(s): "
                         f"{pattern.operator}({operands}), planned as {pattern.name}")
            continue
        window = (f"within {pattern.window_events} events" if pattern.window_events
                  else f"within {pattern.window:g} {workload.time_unit}" if pattern.window
                  else "no window")
        lines.append(f"  {pattern.name} = {pattern.operator}({operands})  {window}")
        if pattern.partition_by:
            lines.append(f"    partition by: {', '.join(pattern.partition_by)}")
        if pattern.strategy != "any":
            strategy = pattern.strategy if isinstance(pattern.strategy, str) else ", ".join(
                f"{var}: {name}" for var, name in pattern.strategy.items())
            kleene = (", 'back to back' a KLEENE with no other event of the partition between "
                      "its events") if any(o.consecutive for o in pattern.operands) else ""
            lines.append(f"    strategy: {strategy} (the operands marked '!__' are the events "
                         f"it excludes{kleene})")
        if pattern.after_match[0] != "any":
            prefer = (f", the {pattern.prefer[0]} match of each first event" if pattern.prefer[0]
                      else "")
            lines.append(f"    after match: {' '.join(pattern.after_match).strip()}{prefer} (its "
                         "matches as found, skipped when written)")
        if pattern.latency:
            bounds = []
            if pattern.latency.max_steps is not None:
                bounds.append(f"{pattern.latency.max_steps} steps")
            if pattern.latency.max_time is not None:
                bounds.append(f"{pattern.latency.max_time:g} {workload.time_unit}")
            lines.append(f"    latency bound: {', '.join(bounds)}")
        if pattern.contexts:
            lines.append(f"    contexts: {', '.join(pattern.contexts)}")
        for predicate in pattern.predicates:
            variables = ",".join(sorted(predicate.variables))
            lines.append(f"    where [{predicate.kind} {variables}] {to_text(predicate.expr)}")
        for attr, expr in pattern.emit.items():
            lines.append(f"    emit {attr}: {pattern.emit_types[attr]} = {to_text(expr)}")
    graph = detection_graph(workload)
    # The event detection graph of seed 002 §2.3.
    lines += ["", "detection graph (each pattern above the events and patterns it is built "
              "from):"]
    lines += [f"  {line}" for line in render_tree(graph)]
    shared = shared_subevents(graph)
    used_by_several = " (each used by several patterns)" if shared else ""
    lines += ["", f"shared subevents: {', '.join(shared) or 'none'}{used_by_several}",
              f"planning order (bottom-up): {', '.join(bottom_up_order(graph))}"]
    return lines


def _operand(operand) -> str:
    """One operand as the format doc names it: `b:B+` (Kleene+), `b:B{2,5}` (its bounds),
    `back to back` when strict contiguity holds between its events, `!n:N` negated."""
    text = f"{operand.var}:{operand.event_type}"
    if operand.kind == "kleene":
        low, high = operand.min_count, operand.max_count
        bounds = "+" if (low, high) == (1, None) else f"{{{low},{high or ''}}}"
        return f"{text}{bounds}" + (" back to back" if operand.consecutive else "")
    if operand.kind == "negated":
        return f"!{text}"
    return text
