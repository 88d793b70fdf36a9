"""Brute-force reference for MATCH_RECOGNIZE queries, written from the SQL standard's row-pattern
definitions (ISO/IEC 19075-5), not from `cepplan import`: rows are partitioned by PARTITION BY
and ordered by ORDER BY; a match is tried at a row, and the first match found from it in the
PATTERN's preference order (greedy quantifiers prefer more rows, reluctant ones fewer; a
concatenation tries its left part's choices first) is the match; AFTER MATCH SKIP names the row
of the next try (the default PAST LAST ROW: the row after the match; TO NEXT ROW: the row after
its first; TO FIRST/LAST V: V's first/last row); without a match the next row is tried.

DEFINE is read in running semantics: `V.col` is the last row mapped to V so far (the current
row while V is tried), NULL when none; an unqualified column reads the current row; PREV/NEXT
move n rows (default 1) before/after in the partition, NULL outside it; FIRST/LAST(V.col, n)
the n-th row from V's first/last; SQL's three-valued logic (NULL is not true). Flink's WITHIN W
keeps a match when its last row's time minus its first's is at most W.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Collection, Iterator

import sqlglot
from sqlglot import exp

_COMPARE = {exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.LT: operator.lt,
            exp.LTE: operator.le, exp.GT: operator.gt, exp.GTE: operator.ge}
_ARITHMETIC = {exp.Add: operator.add, exp.Sub: operator.sub, exp.Mul: operator.mul,
               exp.Div: lambda a, b: a / b if b else float("nan"), exp.Mod: operator.mod}
_QUANTIFIERS = {"": (1, 1, True), "?": (0, 1, True), "??": (0, 1, False),
                "*": (0, math.inf, True), "*?": (0, math.inf, False),
                "+": (1, math.inf, True), "+?": (1, math.inf, False)}
_WITHIN = re.compile(r"WITHIN\s+INTERVAL\s+'(\d+)'\s+(SECOND|MINUTE|HOUR)S?", re.IGNORECASE)
_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600}

Mapped = tuple[tuple[str, int], ...]  # (variable, row index in the partition), in row order


def reference_matches(sql: str, rows: list[dict], within: float | None = None, *,
                      row_id: str = "id", bound: Collection[str] | None = None) -> list[tuple]:
    """Each match as ((variable, row id), ...) in row order, the id read from `row_id`, only
    the rows of `bound` variables when given; the window is the query's WITHIN in seconds,
    else `within` (None: no window)."""
    found = _WITHIN.search(sql)
    if found:
        within = int(found.group(1)) * _SECONDS[found.group(2).upper()]
        sql = sql[:found.start()] + sql[found.end():]
    match = sqlglot.parse_one(sql, read="trino").find(exp.MatchRecognize)
    elements = [_element(token) for token in match.args["pattern"].name.split()]
    order = match.args["order"].expressions[0].this.name
    keys = [c.name for c in match.args.get("partition_by") or ()]
    define = {d.alias: d.this for d in match.args.get("define") or ()}
    after = match.args.get("after")
    skip = " ".join(after.name.upper().split()) if after else "AFTER MATCH SKIP PAST LAST ROW"
    partitions: dict[tuple, list[dict]] = {}
    for row in rows:
        partitions.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for part in partitions.values():
        part.sort(key=lambda r: r[order])

        def fits(mapped: Mapped, part=part) -> bool:
            return within is None or part[mapped[-1][1]][order] - part[mapped[0][1]][order] \
                <= within

        start = 0
        while start < len(part):
            first = next((m for m in _matches(elements, 0, start, (), define, part)
                          if m and fits(m)), None)
            if first is None:
                start += 1
                continue
            out.append(tuple((v, part[i][row_id]) for v, i in first
                             if bound is None or v in bound))
            start = _resume(skip, first, start)
    return sorted(out)


def _element(token: str) -> tuple[str, int, float, bool]:
    """(variable, fewest rows, most rows, greedy) of one PATTERN element: `B`, `B?`, `B*`,
    `B+`, `B{n}`, `B{n,}`, `B{,m}`, `B{n,m}` (a missing n is 0, a missing m unbounded), each
    followed by `?` to make it reluctant."""
    found = re.fullmatch(r"(\w+)([*+?]\??)?", token)
    if found is not None:
        low, high, greedy = _QUANTIFIERS[found.group(2) or ""]
        return found.group(1), low, high, greedy
    found = re.fullmatch(r"(\w+)\{(\d*)(,?)(\d*)\}(\??)", token)
    if found is None:
        raise ValueError(f"the reference does not read the PATTERN element {token!r}")
    var, low, comma, high, reluctant = found.groups()
    if not comma:
        high = low
    return var, int(low or 0), int(high) if high else math.inf, not reluctant


def _resume(skip: str, mapped: Mapped, start: int) -> int:
    if skip == "AFTER MATCH SKIP PAST LAST ROW":
        return mapped[-1][1] + 1
    if skip == "AFTER MATCH SKIP TO NEXT ROW":
        return start + 1
    target = re.fullmatch(r"AFTER MATCH SKIP TO (FIRST |LAST )?(\w+)", skip)
    rows = [i for v, i in mapped if v.upper() == target.group(2)]
    if not rows or (rows[0] if target.group(1) == "FIRST " else rows[-1]) == start:
        raise ValueError("SQL reports an error: AFTER MATCH SKIP to the first row or to none")
    return rows[0] if target.group(1) == "FIRST " else rows[-1]


def _matches(elements, at: int, row: int, mapped: Mapped, define, part) -> Iterator[Mapped]:
    """Every way elements[at:] match from `row` on, after `mapped`, in preference order."""
    if at == len(elements):
        yield mapped
        return
    var, low, high, greedy = elements[at]

    def repeat(count: int, row: int, mapped: Mapped) -> Iterator[Mapped]:
        def more() -> Iterator[Mapped]:
            if count < high and row < len(part):
                tried = (*mapped, (var, row))
                if var not in define or _value(define[var], tried, part) is True:
                    yield from repeat(count + 1, row + 1, tried)

        def stop() -> Iterator[Mapped]:
            if count >= low:
                yield from _matches(elements, at + 1, row, mapped, define, part)

        for choice in ((more, stop) if greedy else (stop, more)):
            yield from choice()

    yield from repeat(0, row, mapped)


def _value(node, mapped: Mapped, part: list[dict]):
    """A DEFINE expression's value in running semantics (module doc); None is SQL's NULL."""
    def value(n):
        return _value(n, mapped, part)

    if isinstance(node, exp.Paren):
        return value(node.this)
    if isinstance(node, exp.Column):
        return _read(node, mapped, part, 0, None)
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
        offset = int(node.expression.this) if node.args.get("expression") else 0
        return _read(node.this, mapped, part, 0, offset if isinstance(node, exp.First)
                     else -1 - offset)
    if isinstance(node, exp.Anonymous) and node.name.upper() in ("PREV", "NEXT"):
        args = node.expressions
        offset = int(args[1].this) if len(args) > 1 else 1
        return _read(args[0], mapped, part, -offset if node.name.upper() == "PREV" else offset,
                     None)
    raise ValueError(f"the reference does not evaluate {node.sql()}")


def _read(column, mapped: Mapped, part: list[dict], shift: int, logical: int | None):
    """`column`'s value on its variable's last row moved `shift` rows in the partition, or
    on the `logical`-th of its variable's rows (negative: from the last)."""
    if not isinstance(column, exp.Column):
        raise ValueError(f"the reference does not navigate from {column.sql()}")
    rows = [i for v, i in mapped if not column.table or v == column.table]
    pick = -1 if logical is None else logical
    if not -len(rows) <= pick < len(rows):
        return None
    index = rows[pick] + shift
    return part[index][column.name] if 0 <= index < len(part) else None
