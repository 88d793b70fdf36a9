"""When a MATCH_RECOGNIZE query's `AFTER MATCH SKIP` cannot change what it finds (`cepplan
import`): cepplan reports every match, as `AFTER MATCH SKIP TO NEXT ROW` does; another skip
finds the same matches when no two matches of the PATTERN can share a row.

For a PATTERN of k single-row variables in strict contiguity, a match starting d rows (0 < d <
k) after another would classify one row both as the t-th and the (t+d)-th variable, for every
t < k - d. The proof used: for every such d some t has DEFINEs that contradict on one row, each
requiring with a top-level `AND` term `column = literal` a different literal in the same
column (Flink's `A AS name = 'a', B AS name = 'b'`).
"""

from __future__ import annotations

from collections.abc import Mapping


def matches_cannot_overlap(variables: list[str], define: Mapping[str, object]) -> bool:
    """True when no two matches of `variables` (single-row, strictly contiguous) can share a
    row, proved from `define` (variable -> its sqlglot DEFINE condition) as the module says."""
    required = {v: _required_values(define.get(v), v) for v in variables}
    k = len(variables)
    return all(any(_contradict(required[variables[t]], required[variables[t + d]])
                   for t in range(k - d))
               for d in range(1, k))


def _contradict(left: dict[str, tuple], right: dict[str, tuple]) -> bool:
    return any(column in right and right[column] != value for column, value in left.items())


def _required_values(condition, var: str) -> dict[str, tuple]:
    """Column -> the literal (kind, value) that `condition` requires of `var`'s own row."""
    from sqlglot import exp

    required: dict[str, tuple] = {}
    pending = [condition] if condition is not None else []
    while pending:
        node = pending.pop()
        if isinstance(node, exp.Paren):
            pending.append(node.this)
        elif isinstance(node, exp.And):
            pending += [node.this, node.expression]
        elif isinstance(node, exp.EQ):
            sides = (node.this, node.expression)
            columns = [s for s in sides if isinstance(s, exp.Column) and s.table in ("", var)]
            literals = [s for s in sides if isinstance(s, exp.Literal)]
            if len(columns) == 1 and len(literals) == 1:
                (column,), (literal,) = columns, literals
                value = literal.this if literal.is_string else float(literal.this)
                required[column.name] = (literal.is_string, value)
    return required
