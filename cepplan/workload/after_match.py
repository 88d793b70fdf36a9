"""A pattern's after-match skip (`after_match`): which of its matches are reported once an
earlier one was (format doc, "After-match skip"); applied to the matches after matching, so
plans, sharing and both matchers are unchanged.

Values: `"any"` (default: every match), `"to_next_event"`, `"past_last_event"`,
`{"to_first": var}`, `{"to_last": var}`; read as (kind, variable or ""). With `prefer`
(`"greedy"`, `"reluctant"`) the skip keeps MATCH_RECOGNIZE's matches: the most preferred one
per first event, taken in the order they start.
"""

from __future__ import annotations

from typing import Any

from cepplan.workload.model import NEGATED, Operand

PLAIN_SKIPS = ("any", "to_next_event", "past_last_event")
VARIABLE_SKIPS = ("to_first", "to_last")


def read_after_match(value: Any) -> tuple[str, str]:
    """(kind, variable) of a schema-valid `after_match` value."""
    if isinstance(value, str):
        return value, ""
    ((kind, var),) = value.items()
    return kind, var


def after_match_problem(skip: tuple[str, str], operator: str,
                        operands: list[Operand]) -> str | None:
    """Why `skip` cannot apply to a pattern of `operator` over `operands`, else None."""
    kind, var = skip
    if kind == "any":
        return None
    if any(o.is_complex for o in operands):
        return (f"after_match {kind!r} orders a match's primitive events: this pattern binds "
                "another pattern's matches")
    if kind not in VARIABLE_SKIPS:
        return None
    named = next((o for o in operands if o.var == var), None)
    if named is None:
        return f"{var!r} is not a variable of this pattern"
    if named.kind == NEGATED:
        return f"{var!r} is negated: it binds no event to skip to"
    if named.optional:
        return (f"{var!r} is optional (OPTIONAL, or KLEENE with min 0): a match may leave it "
                "unbound, with no event to skip to")
    if operator != "SEQ":
        return (f"{kind} needs a SEQ: in {operator} any variable may bind the match's first "
                "event, and skipping to it would find the same match again")
    ordered = sorted((o for o in operands if o.kind != NEGATED), key=lambda o: o.position)
    before = [o for o in ordered if o.position < named.position]
    if all(o.optional for o in before):
        return (f"{var!r} may bind the match's first event: skipping to it would find the "
                "same match again (name a later variable, or use \"to_next_event\")")
    return None


def prefer_problem(prefer: str, skip: tuple[str, str], operator: str) -> str | None:
    """Why the match preference `prefer` cannot apply to a pattern of `operator` with the
    after-match skip `skip`, else None."""
    if skip[0] == "any":
        return (f"prefer {prefer!r} picks one match per first event for an after-match skip: "
                "add \"after_match\" (\"to_next_event\" keeps one match per first event)")
    if operator != "SEQ":
        return (f"prefer {prefer!r} ranks a match by the order of its variables: it needs a "
                f"SEQ, not {operator}")
    return None
