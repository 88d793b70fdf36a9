"""SQL `MATCH_RECOGNIZE` queries into workload.json patterns (`cepplan import`).

The query is parsed by sqlglot (a maintained SQL parser); what it carries over keeps the
query's meaning (docs/import.md): `PATTERN` of single-row variables in strict contiguity
(`strategy: strict`), optional ones `B?`/`B??` (`OPTIONAL`, with the skip's `prefer`), an
`X*?` before the last one as skip-till-next-match (sql_pattern),
`PARTITION BY`, `ORDER BY` one numeric time column, `DEFINE` with `PREV`/`NEXT`/`FIRST`/`LAST`,
`MEASURES` (as `emit`), `AFTER MATCH SKIP` (as `after_match`, with `prefer` where a row
may start several matches or matches may complete out of start order)
and Flink's `WITHIN` (which sqlglot does not read: it is taken from the text
after `PATTERN`).
Every other clause is refused with a `Problem` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cepplan.errors import InputError, Problem
from cepplan.workload.names import RESERVED_ATTRIBUTES, is_name
from cepplan.workload.sql_pattern import read_pattern

_WITHIN = re.compile(r"\bWITHIN\s+INTERVAL\s+'(\d+(?:\.\d+)?)'\s+"
                     r"(MILLISECOND|SECOND|MINUTE|HOUR|DAY)S?\b", re.IGNORECASE)
_UNITS = {"MILLISECOND": "ms", "SECOND": "s", "MINUTE": "min", "HOUR": "h", "DAY": "d"}
_COMPARE = {"EQ": "==", "NEQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
_ARITHMETIC = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%"}
_UNREAD_CLAUSES = {"SUBSET", "WITHIN"}  # clauses sqlglot does not read (WITHIN: other forms)


class _Refused(Exception):
    """A part of the query that cannot be carried over: its place and why."""

    def __init__(self, place: str, message: str):
        super().__init__(message)
        self.place, self.message = place, message


def import_query(sql: str, columns: Mapping[str, str], *, file: str, sample_format: str,
                 time_unit: str = "s", within: float | None = None) -> dict[str, Any]:
    """The workload document equivalent to one MATCH_RECOGNIZE query over a table whose
    columns (name -> double, long, string or bool) are `columns` (`within`: the window in
    `time_unit`, instead of the query's WITHIN); `InputError` naming the clause that cannot
    be carried over."""
    try:
        return _Query(sql, columns, sample_format, time_unit, within).workload()
    except _Refused as err:
        raise InputError([Problem(file, err.place, err.message)]) from None


class _Query:
    """One query being translated (module doc)."""

    def __init__(self, sql: str, columns: Mapping[str, str], sample_format: str,
                 time_unit: str, within: float | None):
        self.columns, self.format, self.time_unit = dict(columns), sample_format, time_unit
        found = _WITHIN.search(sql)
        self.within: float | str | None = within
        if found:
            if within is None:
                self.within = f"{found.group(1)}{_UNITS[found.group(2).upper()]}"
            sql = sql[:found.start()] + " " * (found.end() - found.start()) + sql[found.end():]
        self.match, self.table = _parse(sql)
        self.variables: list[str] = []
        self.gap: str | None = None  # the X of an `X*?` before the last variable
        self.optional: frozenset[str] = frozenset()  # the `B?` / `B??` variables
        self.prefer = ""  # their preference: greedy (B?) or reluctant (B??)
        self.repeated: dict[str, tuple[int, int | None]] = {}  # B+, B{n,m}: (n, m or None)
        self.row = "each"  # which rows of a repeated variable its DEFINE reads (`condition`)
        self.before_first = False  # whether it read the row before them (PREV)
        self.time_column = ""

    def workload(self) -> dict[str, Any]:
        from sqlglot import exp

        args = self.match.args
        conditioned = frozenset(d.alias for d in args.get("define") or ()
                                if not (isinstance(d.this, exp.Boolean) and d.this.this))
        try:
            pattern_read = read_pattern(args["pattern"].name if args.get("pattern") else "",
                                        conditioned)
        except ValueError as err:
            raise _Refused("PATTERN", str(err)) from None
        self.variables, self.gap = pattern_read.variables, pattern_read.gap
        self.optional, self.prefer = pattern_read.optional, pattern_read.prefer
        self.repeated = pattern_read.repeated
        self.time_column = self.order_column(args.get("order"))
        skip = self.after_match(args.get("after"))
        rows = args.get("rows")
        if rows is not None and rows.name.upper() != "ONE ROW PER MATCH":
            raise _Refused("ROWS PER MATCH", f"{rows.name!r} is not supported: cepplan writes "
                           "one record per match (ONE ROW PER MATCH)")
        partition = []
        for column in args.get("partition_by") or ():
            if not isinstance(column, exp.Column) or column.table:
                raise _Refused("PARTITION BY", f"{column.sql()!r}: only plain columns")
            if column.name == self.time_column:
                raise _Refused("PARTITION BY", f"{column.name!r} is the ORDER BY column: the "
                               "time of the events")
            partition.append(self.attribute(column.name, "PARTITION BY"))
        where = []
        defined = set()
        for item in args.get("define") or ():
            var = item.alias
            place = f"DEFINE {var}"
            if var == self.gap:
                if isinstance(item.this, exp.Boolean) and item.this.this:
                    continue
                raise _Refused(place, f"{var}*? carries over as skip-till-next-match only when "
                               f"{var} matches every row: leave {var} out of DEFINE")
            if var not in self.variables:
                raise _Refused(place, f"{var!r} is not a variable of the PATTERN "
                               f"({' '.join(self.variables)})")
            if var in defined:
                raise _Refused(place, f"{var} is defined twice")
            defined.add(var)
            if isinstance(item.this, exp.Boolean) and item.this.this:
                continue  # every row: as if left out of DEFINE
            if item.this.find(exp.Column) is None:
                raise _Refused(place, f"{item.this.sql()!r} reads no column: a condition "
                               "other than TRUE must read the row")
            where.extend(self.condition(item.this, place, var))
        emit = {}
        for measure in args.get("measures") or ():
            place = f"MEASURES {measure.this.alias or measure.sql()}"
            if measure.args.get("window_frame") and measure.args["window_frame"] != "FINAL":
                raise _Refused(place, "RUNNING measures are not supported (a match's values "
                               "are final)")
            if not isinstance(measure.this, exp.Alias) or not is_name(measure.this.alias):
                raise _Refused(place, "a measure needs a name: EXPRESSION AS name")
            name = measure.this.alias
            if name == "ts" or name.startswith("__"):
                raise _Refused(place, f"{name!r} cannot name a measure: cepplan reserves it")
            if name in emit or name in partition:
                raise _Refused(place, f"{name!r} names two columns of the match")
            if self.optional:
                raise _Refused(place, "MEASURES are not supported with an optional variable "
                               f"({', '.join(sorted(self.optional))}): cepplan's matches of "
                               "such a pattern carry their events only")
            emit[name] = self.expression(measure.this.this, place, None)
        pattern: dict[str, Any] = {
            "name": _name(self.match, self.table),
            "structure": ["SEQ", *(self.leaf(v) for v in self.variables)],
            "strategy": "strict" if self.gap is None else {
                **{v: "strict" for v in self.variables[1:-1]}, self.variables[-1]: "next"}}
        if where:
            pattern["where"] = where
        if partition:
            pattern["partition_by"] = partition
        if len(self.variables) > 1:
            if self.within is None:
                raise _Refused("PATTERN", "cepplan needs a time window for a sequence: add "
                               "Flink's WITHIN INTERVAL '10' SECOND after PATTERN (...), or "
                               "give --within")
            pattern["within"] = self.within
        if emit:
            pattern["emit"] = emit
        if skip is not None:
            pattern["after_match"] = skip
            if self.prefer:
                pattern["prefer"] = self.prefer
        attributes = {c: t for c, t in self.columns.items() if c != self.time_column
                      and (c not in RESERVED_ATTRIBUTES or self.ids_column(c))}
        return {"format": "cepplan.workload/1", "name": pattern["name"],
                "time_unit": self.time_unit,
                "source": {"format": self.format, "type": self.table,
                           "time_column": self.time_column,
                           **({"id_column": "id"} if self.ids_column("id") else {})},
                "event_types": {self.table: {"attributes": attributes}},
                "patterns": [pattern]}

    def after_match(self, after) -> str | dict[str, str] | None:
        """The pattern's `after_match` for the query's AFTER MATCH SKIP (None: TO NEXT ROW,
        every match). With single-row variables in strict contiguity a start row has one
        match and matches complete in the order they start, so cepplan's skip (which takes
        matches by completion) keeps SQL's. With `X*?` they may complete out of that order,
        and with optional variables a start row may have several: `prefer` keeps SQL's."""
        shown = " ".join(after.name.upper().split()) if after is not None else \
            "AFTER MATCH SKIP PAST LAST ROW"
        if shown == "AFTER MATCH SKIP TO NEXT ROW":
            return "to_next_event" if self.optional or self.repeated else None
        if self.gap is not None:
            self.prefer = "reluctant"  # matches in start order: a later start may end first
        if shown == "AFTER MATCH SKIP PAST LAST ROW":
            return "past_last_event"
        target = re.fullmatch(r"AFTER MATCH SKIP TO (FIRST|LAST) (\w+)", shown)
        if target is None:
            raise _Refused("AFTER MATCH SKIP", f"{shown!r} is not supported")
        var = next((v for v in self.variables if v.upper() == target.group(2)), None)
        if var is None:
            raise _Refused("AFTER MATCH SKIP", f"{target.group(2)!r} is not a variable of "
                           f"the PATTERN ({' '.join(self.variables)})")
        if var in self.optional:
            raise _Refused("AFTER MATCH SKIP", f"{shown!r} names {var}, which a match may "
                           "leave without rows (SQL then reports an error)")
        if all(v in self.optional for v in self.variables[:self.variables.index(var)]):
            raise _Refused("AFTER MATCH SKIP", f"{shown!r} resumes at the match's first "
                           "row, which SQL reports as an error")
        return {"to_first" if target.group(1) == "FIRST" else "to_last": var}

    def order_column(self, order) -> str:
        from sqlglot import exp

        keys = order.expressions if order is not None else []
        if len(keys) != 1 or keys[0].args.get("desc") or not isinstance(keys[0].this,
                                                                        exp.Column):
            raise _Refused("ORDER BY", "order the rows by one time column, ascending")
        name = keys[0].this.name
        kind = self.columns.get(name)
        if kind not in ("long", "double"):
            problem = "is not a column of the events" if kind is None else f"holds {kind}s"
            raise _Refused("ORDER BY", f"{name!r} {problem}: cepplan reads the time as a "
                           "number of time units")
        return name

    def ids_column(self, name: str) -> bool:
        """Whether `name` is a column of whole numbers named id: the events' own ids
        (`source.id_column`), readable as an attribute too."""
        return name == "id" and self.columns.get(name) == "long"

    def attribute(self, name: str, place: str) -> str:
        if name not in self.columns:
            raise _Refused(place, f"{name!r} is not a column of the events "
                           f"({', '.join(sorted(self.columns))})")
        if name == "ts" and name != self.time_column:
            raise _Refused(place, "a column named 'ts' that is not the ORDER BY column: "
                           "cepplan reserves ts for the event's time")
        if name in RESERVED_ATTRIBUTES and name != "ts" and not self.ids_column(name):
            raise _Refused(place, f"a column named {name!r}: cepplan writes each event's own "
                           f"{name} under that name in the matches; rename the column in the "
                           "events to read it")
        return "ts" if name == self.time_column else name

    def expression(self, node, place: str, current: str | None) -> str:
        """cepplan's expression text for a SQL expression of DEFINE (`current`: the variable
        being defined) or MEASURES (`current` None: columns must name their variable)."""
        from sqlglot import exp

        def text(n) -> str:
            return self.expression(n, place, current)

        kind = type(node).__name__
        if isinstance(node, exp.Paren):
            return f"({text(node.this)})"
        if isinstance(node, exp.Column):
            return self.reference(node, place, current, 0)
        if isinstance(node, exp.Literal):
            return node.this if not node.is_string else "'" + node.this.replace(
                "\\", "\\\\").replace("'", "\\'") + "'"
        if isinstance(node, exp.Boolean):
            return "true" if node.this else "false"
        if isinstance(node, (exp.And, exp.Or)):
            return f"{text(node.this)} {kind.lower()} {text(node.expression)}"
        if isinstance(node, exp.Not):
            return f"not ({text(node.this)})"
        if isinstance(node, exp.Neg):
            return f"-({text(node.this)})"
        if kind in _COMPARE:
            return f"{text(node.this)} {_COMPARE[kind]} {text(node.expression)}"
        if kind in _ARITHMETIC:
            return f"({text(node.this)} {_ARITHMETIC[kind]} {text(node.expression)})"
        if isinstance(node, exp.Abs):
            return f"abs({text(node.this)})"
        if isinstance(node, (exp.First, exp.Last)):
            offset = node.args.get("expression")
            return self.navigation(kind.upper(), [node.this, *([offset] if offset else [])],
                                   place, current)
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("PREV", "NEXT", "FIRST",
                                                                     "LAST"):
            return self.navigation(node.name.upper(), node.expressions, place, current)
        raise _Refused(place, f"{node.sql()!r:.80} is not supported (supported: columns, "
                       "literals, comparisons, arithmetic, AND/OR/NOT, ABS, PREV, NEXT, FIRST, "
                       "LAST)")

    def leaf(self, var: str) -> str | list:
        """The structure leaf of one PATTERN variable: plain, OPTIONAL or KLEENE (bounded; min
        0 when it may match no row)."""
        leaf = f"{var}:{self.table}"
        if var not in self.repeated:
            return ["OPTIONAL", leaf] if var in self.optional else leaf
        low, high = self.repeated[var]
        low = 0 if var in self.optional else low
        bounds = {"min": low} if low != 1 else {}
        return ["KLEENE", leaf, *([bounds | ({"max": high} if high else {})]
                                  if bounds or high else [])]

    def condition(self, node, place: str, var: str) -> list[str]:
        """The `where` entries of `var`'s DEFINE. A repeated variable's condition holds on each
        of its rows: on every row but its first as written (PREV reading its previous row),
        and where PREV reads the row before its first, once more on its first row."""
        self.row = "each"
        self.before_first = False
        each = self.expression(node, place, var)
        if not self.before_first:
            return [each]
        self.row = "first"
        try:
            return [each, self.expression(node, place, var)]
        finally:
            self.row = "each"

    def navigation(self, func: str, args: list, place: str, current: str | None) -> str:
        """PREV/NEXT move to the row before/after a variable's row, which under strict
        contiguity is the neighbouring variable's; FIRST/LAST of a single-row variable are
        its row, and of an unqualified column in DEFINE the match's first / the current row."""
        from sqlglot import exp

        offset = 1 if func in ("PREV", "NEXT") else 0
        if len(args) == 2 and isinstance(args[1], exp.Literal) and args[1].this.isdigit():
            offset = int(args[1].this)
        elif len(args) != 1:
            raise _Refused(place, f"{func} takes a column and an optional whole offset")
        if not isinstance(args[0], exp.Column):
            raise _Refused(place, f"{func} of anything but a column is not supported")
        if func in ("FIRST", "LAST") and offset != 0:
            if (args[0].table or current) in self.repeated:
                raise _Refused(place, f"{func}({args[0].sql()}, {offset}) reads a row inside "
                               "a repeated variable's rows, which cepplan does not name")
            raise _Refused(place, f"{func}({args[0].sql()}, {offset}) reads a row the "
                           f"single-row variable does not have (NULL in SQL)")
        if func == "FIRST" and not args[0].table and current is not None:
            if self.variables[0] in self.optional:
                raise _Refused(place, f"FIRST({args[0].sql()}) reads the match's first row, "
                               f"which the optional {self.variables[0]} may not bind")
            current = self.variables[0]  # FIRST of all the rows matched so far: the first
        shift = {"PREV": -offset, "NEXT": offset}.get(func, 0)
        return self.reference(args[0], place, current, shift, func)

    def reference(self, column, place: str, current: str | None, shift: int,
                  func: str = "") -> str:
        var = column.table or current
        if self.repeated and var in self.variables:
            repeated = self.repeated_reference(column, place, current, shift, func)
            if repeated is not None:
                return repeated
        if var is None:
            raise _Refused(place, f"{column.sql()!r}: name the variable (A.{column.name})")
        if var == self.gap:
            raise _Refused(place, f"{column.sql()!r} reads the rows {var}*? skips, which "
                           "cepplan does not keep")
        if var not in self.variables:
            raise _Refused(place, f"{var!r} is not a variable of the PATTERN "
                           f"({' '.join(self.variables)})")
        if current is not None and self.variables.index(var) > self.variables.index(current):
            raise _Refused(place, f"{column.sql()!r} reads {var}, which comes after {current} "
                           f"in the PATTERN: while {current} is matched SQL reads it as NULL")
        index = self.variables.index(var) + shift
        last = len(self.variables) - 1
        if self.gap is not None and min(index, index - shift) < last <= max(index,
                                                                             index - shift):
            raise _Refused(place, f"{column.sql()!r} moved {abs(shift)} row(s) from {var} "
                           f"reads across {self.gap}*?, whose rows cepplan does not keep")
        if not 0 <= index < len(self.variables):
            raise _Refused(place, f"{column.sql()!r} moved {abs(shift)} row(s) from {var} "
                           "reads a row outside the match, which cepplan does not keep")
        self.refuse_crossing_optional(column, place, current, var, shift)
        return f"{self.variables[index]}.{self.attribute(column.name, place)}"

    def refuse_crossing_optional(self, column, place: str, current: str | None, var: str,
                                 shift: int) -> None:
        """Refuse PREV/NEXT from `var` by `shift` rows across or onto a variable that may match
        no row (but `current`, being matched): which row it reads depends on whether it did."""
        index = self.variables.index(var)
        crossed = [v for v in self.variables[max(0, min(index, index + shift)):
                                             max(index, index + shift) + 1] if v != current]
        if shift and any(v in self.optional for v in crossed):
            raise _Refused(place, f"{column.sql()!r} moved {abs(shift)} row(s) from {var} "
                           "reads a row that depends on whether an optional variable "
                           f"({', '.join(v for v in crossed if v in self.optional)}) matched")

    def repeated_reference(self, column, place: str, current: str | None, shift: int,
                           func: str) -> str | None:
        """A column read on or next to a repeated variable's rows (None: neither; `reference`
        reads it). Its own DEFINE reads the current row (`self.row`: each row, or its first);
        elsewhere it is its last row (as SQL's B.x), FIRST its first."""
        var = column.table or current
        index = self.variables.index(var)
        if current is not None and index > self.variables.index(current):
            return None  # `reference` refuses it
        lands = self.variables[index + shift] if 0 <= index + shift < len(self.variables) \
            else None
        if var not in self.repeated and lands not in self.repeated:
            return None
        self.refuse_crossing_optional(column, place, current, var, shift)
        attr = self.attribute(column.name, place)
        if shift > 0 or (shift < 0 and var in self.repeated and var != current):
            raise _Refused(place, f"{column.sql()!r} moves from a row of the repeated {var} or "
                           "onto it other than PREV within its own DEFINE or to its last row")
        if abs(shift) > 1:
            raise _Refused(place, f"{column.sql()!r} moves {abs(shift)} rows across the "
                           "repeated variable: only PREV by one row carries over")
        if shift == 0:
            if var != current:
                return f"{'FIRST' if func == 'FIRST' else 'LAST'}({var}.{attr})"
            first = func == "FIRST" or self.row == "first"
            return f"FIRST({var}.{attr})" if first else f"{var}.{attr}"
        if var != current:  # PREV onto the repeated variable's last row
            return f"LAST({lands}.{attr})"
        self.before_first = True
        if self.row == "each":
            return f"PREV({var}.{attr})"
        if lands is None:
            raise _Refused(place, f"{column.sql()!r} on {var}'s first row reads a row outside "
                           "the match, which cepplan does not keep")
        return f"LAST({lands}.{attr})" if lands in self.repeated else f"{lands}.{attr}"


def _parse(sql: str):
    """The query's MATCH_RECOGNIZE clause and the table it reads."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        statements = [s for s in sqlglot.parse(sql, read="trino") if s is not None]
    except ParseError as err:
        first = err.errors[0] if err.errors else {}
        word = str(first.get("highlight", "")).upper()
        if word in _UNREAD_CLAUSES:
            raise _Refused(word, f"{word} is not supported") from None
        where = f"line {first.get('line', '?')}, column {first.get('col', '?')}"
        raise _Refused(where, f"not valid SQL: {first.get('description', err)}") from None
    if len(statements) != 1:
        raise _Refused("query", f"expected one query, found {len(statements)}")
    (query,) = statements
    match = query.find(exp.MatchRecognize)
    if not isinstance(query, exp.Select) or match is None:
        raise _Refused("query", "not a MATCH_RECOGNIZE query: expected SELECT * FROM table "
                       "MATCH_RECOGNIZE (...)")
    source = query.args.get("from_") or query.args.get("from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or not is_name(table.name):
        raise _Refused("FROM", "MATCH_RECOGNIZE must read one table by name")
    extra = [k for k in ("where", "group", "having", "limit", "joins", "with")
             if query.args.get(k)]  # an outer ORDER BY orders the result rows only
    if extra:
        raise _Refused(extra[0].upper(), "only SELECT ... FROM table MATCH_RECOGNIZE (...) is "
                       "carried over; the rest of the query is not")
    carried = {m.this.alias for m in match.args.get("measures") or ()
               if isinstance(m.this, exp.Alias)}
    carried |= {c.name for c in match.args.get("partition_by") or ()}
    for item in query.expressions:
        if not isinstance(item, exp.Star) and not (isinstance(item, exp.Column)
                                                   and item.name in carried):
            raise _Refused("SELECT", f"{item.sql()!r}: a match carries its MEASURES and "
                           "PARTITION BY columns only (or SELECT *)")
    return match, table.name


def _name(match, table: str) -> str:
    alias = match.args.get("alias")
    name = alias.name if alias is not None else ""
    return name if is_name(name) else f"{table}_match"
