"""Timed-out partial matches (`"timed_out": true` on a SEQ pattern; FlinkCEP's timed-out side
output), as a rewrite into core patterns: hidden trailing-`NOT` patterns, which the planner,
sharing and both engines (batch and stream) already evaluate.

Definition (format doc, "Timed-out partial matches"): for SEQ(v1..vn), a timed-out partial
match is a prefix (v1..vk), 1 <= k < n, whose events satisfy every predicate over v1..vk only,
within the window, that no event extends to (v1..vk, v(k+1)) — an event after vk, within the
window of v1, satisfying every predicate over v1..v(k+1) only; it times out at v1.ts + window.
That is SEQ(v1..vk, NOT v(k+1)) with those predicates: pattern `NAME__timed_out_k`, its
matches written under NAME with `k` and the timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from cepplan.workload.model import KLEENE, NEGATED, Pattern


def timed_out_name(name: str, k: int) -> str:
    """The hidden pattern finding `name`'s timed-out partial matches of k events."""
    return f"{name}__timed_out_{k}"


def timed_out_problem(pattern: Pattern, spec_strategy: str | Mapping[str, str],
                      has_contexts: bool) -> str | None:
    """Why `pattern` (the user's, as built) cannot report timed-out partial matches, or None."""
    if pattern.operator != "SEQ":
        return (f"timed-out partial matches are prefixes of a sequence: {pattern.operator} "
                "patterns have none; use SEQ")
    named = [spec_strategy] if isinstance(spec_strategy, str) else [*spec_strategy.values()]
    if set(named) - {"any"}:
        return ("timed-out partial matches are defined under strategy \"any\" only (a next "
                "or strict strategy changes which events extend a prefix)")
    if pattern.negated:
        return ("timed-out partial matches are not supported with NOT operands ("
                + ", ".join(o.var for o in pattern.negated) + ")")
    unsupported = [(o.var, "KLEENE") for o in pattern.operands if o.kind == KLEENE]
    unsupported += [(o.var, "OPTIONAL") for o in pattern.operands if o.optional]
    unsupported += [(o.var, "alternatives") for o in pattern.operands if o.alternatives]
    unsupported += [(o.var, "another pattern") for o in pattern.operands if o.is_complex]
    if unsupported:
        what = ", ".join(f"{var} ({kind})" for var, kind in unsupported)
        return ("timed-out partial matches need plain variables of primitive types, not "
                f"{what}")
    if len(pattern.positive) < 2:
        return "the pattern binds one event: a partial match of it cannot time out"
    if has_contexts:
        return "timed-out partial matches are not supported in a workload with contexts"
    if pattern.window_events:
        return ("timed-out partial matches need a time window: a count window has no time "
                "at which a prefix times out")
    return None


def timed_out_patterns(pattern: Pattern) -> list[Pattern]:
    """The hidden patterns SEQ(v1..vk, NOT v(k+1)), k = 1..n-1 (module doc), each carrying
    the predicates over v1..v(k+1) only, reported under the user's pattern's name."""
    ordered = sorted(pattern.operands, key=lambda o: o.position)
    out = []
    for k in range(1, len(ordered)):
        operands = (*ordered[:k], replace(ordered[k], kind=NEGATED))
        kept = {o.var for o in operands}
        out.append(replace(
            pattern, name=timed_out_name(pattern.name, k),
            operands=tuple(replace(o, position=i) for i, o in enumerate(operands)),
            predicates=tuple(p for p in pattern.predicates if p.variables <= kept),
            emit=MappingProxyType({}), emit_types=MappingProxyType({}),
            reported_as=pattern.name, timed_out=k))
    return out
