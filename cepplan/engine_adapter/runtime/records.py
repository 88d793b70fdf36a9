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
import re
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

try:  # faster float text; optional, as Spark executors need only numpy, pandas and pyarrow
    import orjson
except ImportError:  # the isolated spark-submit test runs without it
    orjson = None

from cepplan.engine_adapter.runtime.matcher import Matches
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Table
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

MATCH_COLUMN = "__match"  # a complex event's own match object, as JSON text
RENDER_ROWS = 1 << 14  # matches rendered (and written) together


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
        self._arrow: pa.Array | None = None  # `_texts` as Arrow, until more are rendered

    def event_texts(self, ranks: np.ndarray) -> np.ndarray:
        """The JSON text of each event: id, type, ts, its type's attributes (and, for a
        complex event, its own pattern and events)."""
        ranks = np.asarray(ranks, dtype=np.int64)
        self._render_missing(ranks)
        return self._texts[ranks]

    def _render_missing(self, ranks: np.ndarray) -> None:
        """Render the events among `ranks` not rendered yet (a mask, not a sort: cheap for
        millions of ranks over a table of thousands)."""
        need = np.zeros(len(self.table), dtype=bool)
        need[ranks] = True
        need &= ~self._done
        if need.any():
            self._render(np.flatnonzero(need))

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
        self._arrow = None

    def match_lines(self, spec: PatternSpec, matches: Matches) -> str:
        """All matches as JSON lines (`match_array`'s text)."""
        return lines_text(self.match_array(spec, matches))

    def match_array(self, spec: PatternSpec, matches: Matches) -> pa.ChunkedArray:
        """All matches as Arrow strings, each {"pattern": ..., "events": {var: event or
        [events]}} and a newline, concatenated column by column in Arrow, `RENDER_ROWS`
        matches a chunk: each chunk's data buffer is JSON lines ready to write, with no
        Python string per match, and chunks small enough to reuse the allocator's memory."""
        head = '{"pattern": ' + json.dumps(spec.name) + ', "events": {'
        labels = [f"{', ' if i else head}{json.dumps(v)}: "
                  for i, v in enumerate([*matches.single, *matches.kleene])]
        texts = self._texts_array([*matches.single.values()])
        chunks = []
        for start in range(0, matches.count, RENDER_ROWS):
            stop = min(matches.count, start + RENDER_ROWS)
            columns = [pc.take(texts, ranks[start:stop]) for ranks in matches.single.values()]
            columns += [self._kleene_texts(sets[start:stop]) for sets in matches.kleene.values()]
            pieces = [p for label, column in zip(labels, columns, strict=True)
                      for p in (_scalar(label), column)]
            pieces.append(_scalar("}}\n"))
            chunks.append(pc.binary_join_element_wise(*pieces, _scalar("")))
        return pa.chunked_array(chunks, pa.large_string())

    def _texts_array(self, ranks: list[np.ndarray]) -> pa.Array:
        """The table's event texts as an Arrow column indexed by rank, the events at `ranks`
        rendered (others may be null)."""
        if ranks:
            self._render_missing(np.concatenate(ranks))
        if self._arrow is None:  # converted once per table, not per call (a sharing group's
            self._arrow = pa.array(self._texts, pa.large_string())  # patterns share one)
        return self._arrow

    def _kleene_texts(self, sets: list[tuple[int, ...]]) -> pa.Array:
        """Each set of a Kleene variable's events as a JSON list of their texts."""
        flat = np.fromiter((r for s in sets for r in s), np.int64)
        events = self.event_texts(flat).tolist() if len(flat) else []
        joined, at = [], 0
        for chosen in sets:
            joined.append("[" + ", ".join(events[at:at + len(chosen)]) + "]")
            at += len(chosen)
        return pa.array(joined, pa.large_string())


def _scalar(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def lines_data(lines: pa.Array | pa.ChunkedArray) -> Iterator[pa.Buffer]:
    """The bytes of Arrow strings whose values are whole lines: each chunk's data buffer,
    sliced to its values (no copy)."""
    for chunk in lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines]:
        if not len(chunk):
            continue
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width)
        yield chunk.buffers()[2][int(offsets[chunk.offset]):
                                 int(offsets[chunk.offset + len(chunk)])]


def lines_text(lines: pa.Array | pa.ChunkedArray) -> str:
    """The lines as one Python string."""
    return b"".join(buffer.to_pybytes() for buffer in lines_data(lines)).decode()


def _json_column(values: np.ndarray) -> np.ndarray:
    """Each value as JSON text, as `json.dumps(plain_value(v))` writes it."""
    if values.dtype.kind in "iu":
        return np.asarray(values.astype(str), dtype=object)
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        plain = np.where(finite, values, 0.0)
        # orjson writes floats as repr does but in exponent ranges repr uses e-notation
        out = (np.asarray(orjson.dumps(plain, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1]
                          .decode().split(","), dtype=object) if orjson is not None
               else np.asarray([repr(v) for v in plain.tolist()], dtype=object))
        magnitude = np.abs(plain)
        odd = np.flatnonzero((magnitude >= 1e16) | ((magnitude < 1e-4) & (plain != 0))
                            | ~finite)
        out[odd] = [json.dumps(plain_value(v)) for v in values[odd].tolist()]
        return out
    if values.dtype.kind == "b":
        return np.where(values, "true", "false").astype(object)
    items = values.tolist()
    if all(v is None or type(v) is str for v in items):
        text = "".join(v for v in items if v is not None)
        if text.isascii() and not _ESCAPED.search(text):  # json.dumps adds only the quotes
            return np.asarray(["null" if v is None else '"' + v + '"' for v in items],
                              dtype=object)
    return np.asarray([json.dumps(plain_value(v)) for v in items], dtype=object)


_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')


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
