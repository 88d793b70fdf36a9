"""Matches as output objects (format doc, "matches") and as complex events for higher patterns.

A pattern's match becomes an event of the pattern's type (seed 002 §2.2, complex subevents):
its timestamp is the latest timestamp among its events (its end time; DESIGN.md departures in
docs/matching.md), its attributes are the pattern's `emit` expressions, and its id is a 63-bit
hash of the pattern name and the ids its variables bind, so that every plan and every engine
(the reference matcher included) names a complex event the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

try:  # faster float text; optional, as Spark executors need only numpy, pandas and pyarrow
    import orjson
except ImportError:  # the isolated spark-submit test runs without it
    orjson = None

from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Columns, Table
from cepplan.engine_adapter.runtime.timed_out_output import timed_out_head
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE, EVENT_ZONE
from cepplan.workload.expr.vectorized import evaluate, referenced_keys

if TYPE_CHECKING:  # imported where used: the in-process engine's plain path runs without it
    import pandas as pd

MATCH_COLUMN = "__match"  # a complex event's own match object, as JSON text
ROW_COLUMN = "__row"  # an event's row in the pool its table was built from (`EventTexts`)
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
    pandas = sys.modules.get("pandas")  # pandas' missing values exist only once it is loaded
    if pandas is not None and (value is pandas.NA or value is pandas.NaT):
        return None
    return value


class EventTexts:
    """Each event's JSON text, rendered at most once per pool of events however many tables
    (one per pattern or sharing group and time slice) hold it: a table built from the pool
    carries its events' pool rows in `ROW_COLUMN`, and every `Renderer` over such a table
    reads and fills this one store (so the same matches cost the same to render whatever
    the plan splits the pool into). The texts are held as Arrow string views (`views`, one
    per pool row, into `buffers`), so that they are made Arrow strings once, not once per
    table that renders them."""

    def __init__(self, size: int):
        self.views = np.zeros(size, dtype="V16")
        self.buffers: list[pa.Buffer] = []
        self.done = np.zeros(size, dtype=bool)

    def add(self, rows: np.ndarray, texts: pa.Array) -> None:
        """Keep `texts` as the texts of pool rows `rows`."""
        views, buffers = _views(texts)
        self.views[rows] = _rebased(views, len(self.buffers))
        self.buffers += buffers
        self.done[rows] = True

    def strings(self, rows: np.ndarray) -> pa.LargeStringArray:
        """The texts of pool rows `rows` (rendered), as Arrow strings."""
        return _strings(self.views[rows], self.buffers)


class Renderer:
    """Renders matches of one table as JSON text, once and column by column: each event's
    text is built once (cached by pool row, `EventTexts`) and a match's text is the
    concatenation of its events' texts, so no per-match object is built (docs/matching.md,
    "Matches: rendered once")."""

    def __init__(self, table: Table, type_attrs: Mapping[str, Sequence[str]],
                 texts: EventTexts | None = None):
        self.table = table
        self.type_attrs = type_attrs
        rows = table.columns.get(ROW_COLUMN) if texts is not None else None
        self._store = texts if rows is not None else EventTexts(len(table))
        self._rows = (np.asarray(rows, dtype=np.int64) if rows is not None
                      else np.arange(len(table), dtype=np.int64))

    def event_texts(self, ranks: np.ndarray) -> pa.LargeStringArray:
        """The JSON text of each event: id, type, ts, its type's attributes (and, for a
        complex event, its own pattern and events)."""
        ranks = np.asarray(ranks, dtype=np.int64)
        need = ranks[~self._store.done[self._rows[ranks]]]
        if len(need):
            self._render(np.unique(need))
        return self._store.strings(self._rows[ranks])

    def _render(self, ranks: np.ndarray) -> None:
        """Each event's text: its values as JSON column by column (each column once for
        every kind of event having it), put together row by row by one %-format per event
        (no intermediate string per field)."""
        table = self.table
        codes: dict[str, int] = {}  # each kind of event by first appearance
        kind_of = np.fromiter((codes.setdefault(str(t), len(codes))
                               for t in table.types[ranks].tolist()), np.int64, len(ranks))
        kinds = list(codes)
        # an attribute `id` is the events' own id (source.id_column): written once, as theirs
        attrs = {k: [a for a in self.type_attrs.get(k, ()) if a != "id"] for k in kinds}
        columns = {"id": _json_column(table.ids[ranks]), "ts": _json_column(table.ts[ranks])}
        for attr in dict.fromkeys(a for names in attrs.values() for a in names):
            having = [i for i, k in enumerate(kinds) if attr in attrs[k]]
            if len(having) == len(kinds):
                columns[attr] = _json_column(table.column(attr)[ranks])
                continue
            having = np.isin(kind_of, having)
            columns[attr] = np.empty(len(ranks), dtype=object)
            columns[attr][having] = _json_column(table.column(attr)[ranks[having]])
        nested = (table.columns[MATCH_COLUMN][ranks] if MATCH_COLUMN in table.columns
                  else None)
        text = np.empty(len(ranks), dtype=object)
        for index, kind in enumerate(kinds):
            mine = np.flatnonzero(kind_of == index)
            form = "".join(["{\"id\": %s, \"type\": ", _literal(json.dumps(kind)),
                            ", \"ts\": %s",
                            *(f", {_literal(json.dumps(a))}: %s" for a in attrs[kind])])
            values = zip(*(columns[c][mine].tolist() for c in ["id", "ts", *attrs[kind]]),
                         strict=True)
            own = nested[mine] if nested is not None else None
            if own is None or not any(isinstance(t, str) for t in own):
                made = [(form + "}") % row for row in values]
            else:  # a complex event: its own pattern and events follow, from its match
                made = [(form + ", " + t[1:].replace("%", "%%") if isinstance(t, str)
                         else form + "}") % row for row, t in zip(values, own, strict=True)]
            text[mine] = made
        self._store.add(self._rows[ranks], pa.array(text, pa.large_string()))

    def match_lines(self, spec: PatternSpec, matches: Matches) -> str:
        """All matches as JSON lines (`match_array`'s text)."""
        return lines_text(self.match_array(spec, matches))

    def match_array(self, spec: PatternSpec, matches: Matches) -> pa.ChunkedArray:
        """All matches as Arrow strings, each {"pattern": ..., "events": {var: event or
        [events]}} and a newline, `RENDER_ROWS` matches a chunk, each chunk's data buffer
        JSON lines ready to write. A line is its pieces one after the other: per variable,
        its label and event text (made once per event it binds, label included) or its
        Kleene list, the closing braces on the last piece. Each piece's 16-byte string view
        is looked up by rank (NumPy), and one Arrow cast per chunk copies the pieces of its
        lines in order: no Python string per match, no array the size of the table
        per chunk (docs/matching.md, "Output cost")."""
        head = '{"pattern": ' + json.dumps(spec.output_name) + ', "events": {'
        single = _first_in_sequence(spec, matches.single) if spec.timed_out else matches.single
        names = [*single, *matches.kleene]
        labels = {v: f"{', ' if i else head}{json.dumps(v)}: " for i, v in enumerate(names)}
        ends = {v: "}}\n" if v == names[-1] else "" for v in names}
        used = {v: np.flatnonzero(self._mask(ranks)) for v, ranks in single.items()}
        sizes = [len(ranks) for ranks in used.values()]
        label_texts = _repeated([labels[v] for v in used], sizes)
        if spec.timed_out:  # the first event's piece opens with its timeout
            label_texts = pa.concat_arrays([
                self._timed_out_heads(spec, names[0], used[names[0]]), label_texts[sizes[0]:]])
        fixed = pc.binary_join_element_wise(
            label_texts,
            self.event_texts(np.concatenate([np.empty(0, np.int64), *used.values()])),
            _repeated([ends[v] for v in used], sizes), _scalar(""))
        views, buffers = _views(fixed)
        by_rank, start = [], 0  # per single variable: its piece's view at each rank it binds
        for ranks in used.values():
            view = np.empty(len(self.table), dtype=views.dtype)
            view[ranks] = views[start:start + len(ranks)]
            by_rank.append(view)
            start += len(ranks)
        sets = {v: flat_sets(s) for v, s in matches.kleene.items()}
        texts, at = (self._arrow_texts([self._mask(flat) for flat, _ in sets.values()])
                     if sets else (None, None))
        chunks = []
        for first in range(0, matches.count, RENDER_ROWS):
            last = min(matches.count, first + RENDER_ROWS)
            laid = np.empty((last - first, len(names)), dtype=views.dtype)
            for i, ranks in enumerate(single.values()):
                laid[:, i] = by_rank[i][ranks[first:last]]
            more = list(buffers)
            for i, var in enumerate(matches.kleene, start=len(single)):
                lists, own = _views(_kleene_texts(texts, at, *sets[var], first, last,
                                                  labels[var], ends[var]))
                laid[:, i] = _rebased(lists, len(more))
                more += own
            pieces = _strings(laid.ravel(), more)
            offsets = np.frombuffer(pieces.buffers()[1], np.int64)[pieces.offset:][
                :len(pieces) + 1:len(names)]
            chunks.append(pa.LargeStringArray.from_buffers(
                last - first, pa.py_buffer(np.ascontiguousarray(offsets)), pieces.buffers()[2]))
        return pa.chunked_array(chunks, pa.large_string())

    def _timed_out_heads(self, spec: PatternSpec, first: str,
                         ranks: np.ndarray) -> pa.LargeStringArray:
        """A timed-out partial match's opening, per event its first variable `first` binds:
        the user's pattern, `k` and the timeout (that event's timestamp plus the window)."""
        head = f'{timed_out_head(spec.output_name)}{{"k": {spec.timed_out}, "at": '
        tail = f'}}, "events": {{{json.dumps(first)}: '
        timeouts = (self.table.ts[ranks] + spec.window).tolist()
        return pa.array([f"{head}{t!r}{tail}" for t in timeouts], pa.large_string())

    def _mask(self, ranks: np.ndarray) -> np.ndarray:
        """Which of the table's events `ranks` holds."""
        mask = np.zeros(len(self.table), dtype=bool)
        mask[ranks] = True
        return mask

    def _arrow_texts(self, masks: Sequence[np.ndarray]) -> tuple[pa.Array, np.ndarray]:
        """The texts of every event some of `masks` flags, as one Arrow array, and each
        rank's position in it."""
        used = np.logical_or.reduce(masks)
        return self.event_texts(np.flatnonzero(used)), np.cumsum(used) - 1


def with_rows(frame: pd.DataFrame | Columns, attributes: Sequence[str]) -> list[str]:
    """The attributes a table of `frame` keeps, with `ROW_COLUMN` when the frame has it."""
    return [*attributes, *([ROW_COLUMN] if ROW_COLUMN in frame.columns else [])]


def flat_sets(sets: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """A Kleene variable's sets as their ranks one after the other and each set's start
    (and the end of the last) in them."""
    sizes = np.fromiter(map(len, sets), np.int64, len(sets))
    flat = np.fromiter(chain.from_iterable(sets), np.int64, int(sizes.sum()))
    return flat, np.concatenate([[0], np.cumsum(sizes)])


def _kleene_texts(texts: pa.Array, at: np.ndarray, flat: np.ndarray, starts: np.ndarray,
                  first: int, last: int, label: str, end: str) -> pa.Array:
    """Sets `first`..`last` of a Kleene variable's (`flat_sets`) each as its label, a JSON
    list of its events' texts and `end`, by Arrow kernels (no Python string per set)."""
    low, high = int(starts[first]), int(starts[last])
    events = _gathered(texts, at[flat[low:high]])
    lists = pa.LargeListArray.from_arrays(pa.array(starts[first:last + 1] - low, pa.int64()),
                                          events)
    return pc.binary_join_element_wise(_scalar(label + "["), pc.binary_join(lists, _scalar(", ")),
                                       _scalar("]" + end), _scalar(""))


def _gathered(values: pa.Array, indices: np.ndarray) -> pa.LargeStringArray:
    """`values.take(indices)` as large strings, the bytes copied once (`_views`,
    `_strings`)."""
    views, buffers = _views(values)
    return _strings(views[indices], buffers)


def _views(values: pa.Array) -> tuple[np.ndarray, list[pa.Buffer]]:
    """Strings as their 16-byte string views (a NumPy array, one per value) and the data
    buffers the views point into (a cast, no copy of the bytes)."""
    views = values.cast(pa.string_view())
    buffers = views.buffers()
    return (np.frombuffer(buffers[1], dtype="V16")[views.offset:views.offset + len(views)],
            buffers[2:])


def _rebased(views: np.ndarray, base: int) -> np.ndarray:
    """String views whose data buffers come `base` places later in a list of buffers
    (a view of more than 12 bytes holds its buffer's index; shorter ones are inline)."""
    fields = views.view(np.int32).reshape(-1, 4).copy()
    fields[fields[:, 0] > 12, 2] += base
    return fields.view(views.dtype).ravel()


def _strings(views: np.ndarray, buffers: list[pa.Buffer]) -> pa.LargeStringArray:
    """The strings `views` point at (into `buffers`) as large strings: Arrow's cast
    copies the bytes once, 2-3 times faster than `take` over strings of ~100 bytes, which
    copies each value with its offset bookkeeping (docs/matching.md, "Output cost")."""
    array = pa.Array.from_buffers(pa.string_view(), len(views),
                                  [None, pa.py_buffer(views), *buffers])
    return array.cast(pa.large_string())


def _first_in_sequence(spec: PatternSpec, single: dict) -> dict:
    """`single` with the SEQ's first variable first (a timed-out match opens with it)."""
    first = next(o.var for o in spec.operands if o.position == 0)
    return {first: single[first]} | single


def _repeated(texts: Sequence[str], counts: Sequence[int]) -> pa.LargeStringArray:
    """Each of `texts` `counts` times, as Arrow strings (an Arrow `take`: no Python object
    per value)."""
    return pa.array(texts, pa.large_string()).take(
        np.repeat(np.arange(len(texts), dtype=np.int32), counts))


def _literal(text: str) -> str:
    """`text` as it reads inside a %-format."""
    return text.replace("%", "%%")


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
        return np.asarray(orjson.dumps(np.ascontiguousarray(values),
                                       option=orjson.OPT_SERIALIZE_NUMPY)[1:-1]
                          .decode().split(",") if orjson is not None and len(values)
                          else list(map(str, values.tolist())), dtype=object)
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
    ends = np.vstack([table.ts[a] for a in lasts.values()])
    stamps = np.max(ends, axis=0)
    ids = np.empty(count, dtype=np.int64)
    table_ids = table.ids.tolist()
    for row in range(count):
        bound = {v: [table_ids[r] for r in matches.ranks_of(v, row)]
                 for v in list(matches.single) + list(matches.kleene)}
        ids[row] = complex_event_id(spec.name, bound)
    frame = {EVENT_TYPE: np.full(count, spec.name, dtype=object), EVENT_TS: stamps,
             EVENT_ID: ids, **emitted(spec, table, firsts, lasts, count)}
    frame[MATCH_COLUMN] = np.asarray(texts, dtype=object)
    if EVENT_ZONE in table.columns:  # its time is its last event's: so is its zone offset
        last = np.argmax(ends, axis=0)
        zones = np.vstack([table.columns[EVENT_ZONE][a] for a in lasts.values()])
        frame[EVENT_ZONE] = zones[last, np.arange(count)]
    import pandas as pd

    return pd.DataFrame(frame)


def emitted(spec: PatternSpec, table: Table, firsts: Mapping[str, np.ndarray],
            lasts: Mapping[str, np.ndarray], count: int) -> dict[str, np.ndarray]:
    """The pattern's `emit` attributes of `count` matches, from the ranks of each variable's
    first and last event (`FIRST`/`LAST` of a Kleene variable; a plain one's event is both);
    missing values where the match does not bind a variable the expression reads (an OR)."""
    values = {}
    for attr, tree in spec.emit.items():
        columns = {}
        for key in referenced_keys(tree):
            var, source = (key[0], lasts) if len(key) == 2 else (
                key[1], firsts if key[0] == "FIRST" else lasts)
            if var not in source:
                values[attr] = np.full(count, None, dtype=object)
                break
            columns[key] = table.column(key[-1])[source[var]]
        else:
            values[attr] = evaluate(tree, columns, count)
    return values
