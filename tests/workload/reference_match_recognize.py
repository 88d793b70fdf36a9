"""Brute-force reference for the MATCH_RECOGNIZE queries `cepplan import` carries over,
written from the SQL standard's row-pattern definitions (ISO/IEC 19075-5), not from the
import: rows partitioned by PARTITION BY and ordered by ORDER BY; with AFTER MATCH SKIP TO
NEXT ROW a match is tried at every row; a PATTERN of k single-row variables matches rows
i..i+k-1 of the partition, the j-th row classified as the j-th variable, when every DEFINE
is true for its row (SQL's three-valued logic: NULL is not true; PREV/NEXT read the row
before/after in the partition, NULL outside it; FIRST/LAST of a one-row variable read its
row); Flink's WITHIN W keeps matches whose last row's time minus the first's is at most W.
"""

from __future__ import annotations

import operator
import re

import sqlglot
from sqlglot import exp

_COMPARE = {exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.LT: operator.lt,
            exp.LTE: operator.le, exp.GT: operator.gt, exp.GTE: operator.ge}
_ARITHMETIC = {exp.Add: operator.add, exp.Sub: operator.sub, exp.Mul: operator.mul,
               exp.Div: lambda a, b: a / b if b else float("nan"), exp.Mod: operator.mod}


def reference_matches(sql: str, rows: list[dict], within: float | None) -> list[tuple]:
    """Each match as ((variable, row id), ...) in PATTERN order; `rows` carry an `id`."""
    query = sqlglot.parse_one(re.sub(r"WITHIN INTERVAL '\d+' SECOND", "", sql), read="trino")
    match = query.find(exp.MatchRecognize)
    variables = match.args["pattern"].name.split()
    order = match.args["order"].expressions[0].this.name
    keys = [c.name for c in match.args.get("partition_by") or ()]
    define = {d.alias: d.this for d in match.args.get("define") or ()}
    partitions: dict[tuple, list[dict]] = {}
    for row in rows:
        partitions.setdefault(tuple(row[k] for k in keys), []).append(row)
    found = []
    for part in partitions.values():
        part.sort(key=lambda r: r[order])
        for start in range(len(part) - len(variables) + 1):
            at = {v: start + j for j, v in enumerate(variables)}
            chosen = [part[at[v]] for v in variables]
            if within is not None and chosen[-1][order] - chosen[0][order] > within:
                continue
            if all(_value(define[v], v, at, part) is True for v in variables if v in define):
                found.append(tuple((v, part[at[v]]["id"]) for v in variables))
    return sorted(found)


def _value(node, current: str, at: dict[str, int], part: list[dict]):
    """A DEFINE expression's value for the rows classified as `at` (None: SQL's NULL)."""
    def value(n):
        return _value(n, current, at, part)

    if isinstance(node, exp.Paren):
        return value(node.this)
    if isinstance(node, exp.Column):
        return _read(node, current, at, part, 0)
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else float(node.this)
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.And):
        left, right = value(node.this), value(node.expression)
        return False if False in (left, right) else (None if None in (left, right) else True)
    if isinstance(node, exp.Or):
        left, right = value(node.this), value(node.expression)
        return True if True in (left, right) else (None if None in (left, right) else False)
    if isinstance(node, exp.Not):
        inner = value(node.this)
        return None if inner is None else not inner
    if isinstance(node, (exp.Neg, exp.Abs)):
        inner = value(node.this)
        return None if inner is None else (-inner if isinstance(node, exp.Neg) else abs(inner))
    if type(node) in _COMPARE or type(node) in _ARITHMETIC:
        left, right = value(node.this), value(node.expression)
        if left is None or right is None:
            return None
        return {**_COMPARE, **_ARITHMETIC}[type(node)](left, right)
    if isinstance(node, (exp.First, exp.Last)):
        return _read(node.this, current, at, part, 0)
    if isinstance(node, exp.Anonymous):
        args = node.expressions
        offset = int(args[1].this) if len(args) > 1 else 1
        return _read(args[0], current, at, part, -offset if node.name.upper() == "PREV"
                     else offset)
    raise ValueError(f"the reference does not evaluate {node.sql()}")


def _read(column, current: str, at: dict[str, int], part: list[dict], shift: int):
    index = at[column.table or current] + shift
    return part[index][column.name] if 0 <= index < len(part) else None
