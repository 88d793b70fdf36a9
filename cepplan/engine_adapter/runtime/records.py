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
    """Turns ranks of one table into event objects, caching the table as Python lists."""

    def __init__(self, table: Table, type_attrs: Mapping[str, Sequence[str]]):
        self.table = table
        self.type_attrs = type_attrs
        self.ids = table.ids.tolist()
        self.ts = table.ts.tolist()
        self.types = table.types.tolist()
        self._lists: dict[str, list] = {}

    def _values(self, attr: str) -> list:
        if attr not in self._lists:
            self._lists[attr] = self.table.column(attr).tolist()
        return self._lists[attr]

    def event(self, rank: int) -> dict:
        """One event object: id, type, ts, its type's attributes (and, for a complex event,
        its own pattern and events)."""
        kind = self.types[rank]
        obj = {"id": self.ids[rank], "type": kind, "ts": self.ts[rank]}
        for attr in self.type_attrs.get(kind, ()):
            obj[attr] = plain_value(self._values(attr)[rank])
        if MATCH_COLUMN in self.table.columns:
            nested = self._values(MATCH_COLUMN)[rank]
            if isinstance(nested, str):
                obj.update(json.loads(nested))
        return obj

    def match(self, spec: PatternSpec, matches: Matches, row: int) -> dict:
        """One match object: {"pattern": ..., "events": {var: event or [events]}}."""
        events = {}
        for var, ranks in matches.single.items():
            events[var] = self.event(int(ranks[row]))
        for var, sets in matches.kleene.items():
            events[var] = [self.event(r) for r in sets[row]]
        return {"pattern": spec.name, "events": events}


def complex_events(table: Table, spec: PatternSpec, matches: Matches,
                   renderer: Renderer) -> pd.DataFrame:
    """The matches as events of the pattern's type, with emitted attributes and the match."""
    count = matches.count
    lasts = dict(matches.single)
    firsts = dict(matches.single)
    for var, sets in matches.kleene.items():
        firsts[var] = np.fromiter((s[0] for s in sets), np.int64, count)
        lasts[var] = np.fromiter((s[-1] for s in sets), np.int64, count)
    stamps = np.max(np.vstack([table.ts[a] for a in lasts.values()]), axis=0)
    ids = np.empty(count, dtype=np.int64)
    texts = []
    for row in range(count):
        bound = {v: [renderer.ids[r] for r in matches.ranks_of(v, row)]
                 for v in list(matches.single) + list(matches.kleene)}
        ids[row] = complex_event_id(spec.name, bound)
        texts.append(json.dumps(renderer.match(spec, matches, row)))
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
