"""Matches as output objects (format doc, "matches") and as complex events for higher patterns.

A pattern's match becomes an event of the pattern's type (seed 002 §2.2, complex subevents):
its timestamp is the latest timestamp among its events (its end time; DESIGN.md departures in
docs/engine.md), its attributes are the pattern's `emit` expressions, and its id is a 63-bit
hash of the pattern name and the ids its variables bind, so that every plan and every engine
(the reference matcher included) names a complex event the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.matcher import Matches
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Table
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

MATCH_COLUMN = "__match"  # a complex event's own match object, as JSON text


def complex_event_id(pattern: str, bound: Mapping[str, Sequence[int]]) -> int:
    """The id of a complex event: a hash of its pattern and the ids bound to each variable."""
    text = pattern + "|" + ";".join(f"{var}={'/'.join(str(i) for i in bound[var])}"
                                    for var in sorted(bound))
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & ((1 << 63) - 1)


def plain_value(value: object) -> object:
    """A JSON-ready scalar: NumPy scalars unwrapped, NaN and missing values as null."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


class Renderer:
    """Renders matches of one table as JSON text, once and column by column: each event's
    text is built once (cached by rank) and a match's text is the concatenation of its
    events' texts, so no per-match object is built (docs/engine.md, "Matches")."""

    def __init__(self, table: Table, type_attrs: Mapping[str, Sequence[str]]):
        self.table = table
        self.type_attrs = type_attrs
        self._texts = np.full(len(table), None, dtype=object)
        self._done = np.zeros(len(table), dtype=bool)

    def event_texts(self, ranks: np.ndarray) -> np.ndarray:
        """The JSON text of each event: id, type, ts, its type's attributes (and, for a
        complex event, its own pattern and events)."""
        ranks = np.asarray(ranks, dtype=np.int64)
        todo = np.unique(ranks[~self._done[ranks]])
        if len(todo):
            self._render(todo)
        return self._texts[ranks]

    def _render(self, ranks: np.ndarray) -> None:
        table = self.table
        types = table.types[ranks]
        for kind in np.unique(types.astype(str)):
            mine = ranks[types == kind]
            text = ('{"id": ' + _json_column(table.ids[mine]) + ', "type": '
                    + json.dumps(kind) + ', "ts": ' + _json_column(table.ts[mine]))
            for attr in self.type_attrs.get(kind, ()):
                text = text + f", {json.dumps(attr)}: " + _json_column(table.column(attr)[mine])
            if MATCH_COLUMN in table.columns:
                nested = table.columns[MATCH_COLUMN][mine]
                own = np.array([isinstance(t, str) for t in nested], dtype=bool)
                if own.any():
                    text[own] = text[own] + ", " + np.array([t[1:] for t in nested[own]],
                                                            dtype=object)
                    text[~own] = text[~own] + "}"
                else:
                    text = text + "}"
            else:
                text = text + "}"
            self._texts[mine] = text
            self._done[mine] = True

    def match_lines(self, spec: PatternSpec, matches: Matches) -> str:
        """All matches as JSON lines, each {"pattern": ..., "events": {var: event or
        [events]}} and a newline: the pieces of every match interleaved in one array and
        joined once, so each byte is copied once."""
        if not matches.count:
            return ""
        columns: list[object] = ['{"pattern": ' + json.dumps(spec.name) + ', "events": {']
        sep = ""
        for var, ranks in matches.single.items():
            columns += [f"{sep}{json.dumps(var)}: ", self.event_texts(ranks)]
            sep = ", "
        for var, sets in matches.kleene.items():
            flat = np.fromiter((r for s in sets for r in s), np.int64)
            events = self.event_texts(flat).tolist() if len(flat) else []
            joined, at = [], 0
            for chosen in sets:
                joined.append("[" + ", ".join(events[at:at + len(chosen)]) + "]")
                at += len(chosen)
            columns += [f"{sep}{json.dumps(var)}: ", np.asarray(joined, dtype=object)]
            sep = ", "
        columns.append("}}\n")
        pieces = np.empty((matches.count, len(columns)), dtype=object)
        for i, column in enumerate(columns):
            pieces[:, i] = column
        return "".join(pieces.ravel().tolist())


def _json_column(values: np.ndarray) -> np.ndarray:
    """Each value as JSON text, as `json.dumps(plain_value(v))` writes it."""
    if values.dtype.kind in "iu":
        return np.asarray(values.astype(str), dtype=object)
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        out = np.asarray([repr(v) for v in values.tolist()], dtype=object) if finite.all() \
            else np.asarray([json.dumps(plain_value(v)) for v in values.tolist()], dtype=object)
        return out
    if values.dtype.kind == "b":
        return np.where(values, "true", "false").astype(object)
    return np.asarray([json.dumps(plain_value(v)) for v in values.tolist()], dtype=object)


def complex_events(table: Table, spec: PatternSpec, matches: Matches,
                   texts: list[str]) -> pd.DataFrame:
    """The matches as events of the pattern's type, with emitted attributes and the match
    (`texts`: the matches' JSON, rendered once by `Renderer.match_lines`)."""
    count = matches.count
    lasts = dict(matches.single)
    firsts = dict(matches.single)
    for var, sets in matches.kleene.items():
        firsts[var] = np.fromiter((s[0] for s in sets), np.int64, count)
        lasts[var] = np.fromiter((s[-1] for s in sets), np.int64, count)
    stamps = np.max(np.vstack([table.ts[a] for a in lasts.values()]), axis=0)
    ids = np.empty(count, dtype=np.int64)
    table_ids = table.ids.tolist()
    for row in range(count):
        bound = {v: [table_ids[r] for r in matches.ranks_of(v, row)]
                 for v in list(matches.single) + list(matches.kleene)}
        ids[row] = complex_event_id(spec.name, bound)
    frame = {EVENT_TYPE: np.full(count, spec.name, dtype=object), EVENT_TS: stamps,
             EVENT_ID: ids}
    for attr, tree in spec.emit.items():
        columns = {}
        for key in referenced_keys(tree):
            if len(key) == 2:
                columns[key] = table.column(key[1])[lasts[key[0]]]
            else:
                source = firsts if key[0] == "FIRST" else lasts
                columns[key] = table.column(key[2])[source[key[1]]]
        frame[attr] = evaluate(tree, columns, count)
    frame[MATCH_COLUMN] = np.asarray(texts, dtype=object)
    return pd.DataFrame(frame)
