"""The renderer's match lines against an independent reference: each line is `json.dumps`
of its match object built in Python (format doc, "matches"), over random tables, variables,
Kleene sets, chunk sizes and a pool's shared event texts (docs/matching.md, "Output cost")."""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.runtime import records
from cepplan.engine_adapter.runtime.matches import Matches
from cepplan.engine_adapter.runtime.records import (
    ROW_COLUMN,
    EventTexts,
    Renderer,
    _rebased,
    _strings,
    _views,
    plain_value,
)
from cepplan.engine_adapter.runtime.spec import PatternSpec
from cepplan.engine_adapter.runtime.table import Table

TYPE_ATTRS = {"A": ["x", "s"], "B": ["k", "x"], "C": []}
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
FLOAT = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e17, 3e-7, -0.0])


@st.composite
def tables(draw) -> Table:
    n = draw(st.integers(1, 30))
    return Table(ts=np.sort(np.asarray(draw(st.lists(st.floats(0, 1e6), min_size=n,
                                                     max_size=n)))),
                 ids=np.arange(100, 100 + n, dtype=np.int64),
                 types=np.asarray(draw(st.lists(st.sampled_from(sorted(TYPE_ATTRS)),
                                                min_size=n, max_size=n)), dtype=object),
                 columns={"x": np.asarray(draw(st.lists(FLOAT, min_size=n, max_size=n))),
                          "s": np.asarray(draw(st.lists(TEXT, min_size=n, max_size=n)),
                                          dtype=object),
                          "k": np.asarray(draw(st.lists(st.integers(-2**40, 2**40),
                                                        min_size=n, max_size=n)))})


def _event(table: Table, rank: int) -> dict:
    kind = str(table.types[rank])
    return {"id": int(table.ids[rank]), "type": kind, "ts": float(table.ts[rank]),
            **{a: plain_value(table.columns[a][rank]) for a in TYPE_ATTRS[kind]}}


def _reference(table: Table, name: str, matches: Matches) -> str:
    """Each match as `json.dumps` of its object, one line each."""
    lines = []
    for row in range(matches.count):
        events = {v: _event(table, int(r[row])) for v, r in matches.single.items()}
        events |= {v: [_event(table, r) for r in sets[row]]
                   for v, sets in matches.kleene.items()}
        lines.append(json.dumps({"pattern": name, "events": events}) + "\n")
    return "".join(lines)


@settings(max_examples=80)
@given(tables(), st.data())
def test_lines_are_the_match_objects(table, data):
    """Every line, in order, is `json.dumps` of its match object; each Arrow value is one
    line, in chunks of `RENDER_ROWS` (drawn small, so that matches span many chunks)."""
    n = len(table)
    count = data.draw(st.integers(0, 40))
    ranks = st.lists(st.integers(0, n - 1), min_size=count, max_size=count)
    single = {f"v{i}": np.asarray(data.draw(ranks), dtype=np.int64)
              for i in range(data.draw(st.integers(0 if count else 1, 4)))}
    kleene = {f"k{i}": [tuple(sorted(s)) for s in data.draw(st.lists(
        st.lists(st.integers(0, n - 1), min_size=1, max_size=4), min_size=count,
        max_size=count))] for i in range(data.draw(st.integers(0 if single else 1, 2)))}
    matches = Matches(single, kleene, count)
    name = data.draw(st.sampled_from(["p", "a \"quoted\" pattern", "π-pattern"]))
    spec = PatternSpec(name, "SEQ", (), (), None)
    rows = data.draw(st.integers(1, 7))
    with mock.patch.object(records, "RENDER_ROWS", rows):
        lines = Renderer(table, TYPE_ATTRS).match_array(spec, matches)
    assert lines.type == pa.large_string()
    assert [len(c) for c in lines.chunks] == [min(rows, count - start)
                                              for start in range(0, count, rows)]
    assert "".join(lines.to_pylist()) == _reference(table, name, matches)
    assert all(line.count("\n") == 1 and line.endswith("\n") for line in lines.to_pylist())
    assert records.lines_text(lines) == _reference(table, name, matches)


@settings(max_examples=30)
@given(tables(), st.data())
def test_shared_event_texts(table, data):
    """Two tables over one pool of events (each row's pool row in `ROW_COLUMN`) render
    through one `EventTexts`: the second reuses texts the first made, and both give the
    reference lines."""
    n = len(table)
    pool_rows = np.asarray(data.draw(st.permutations(range(n))), dtype=np.int64)
    store = EventTexts(n)
    spec = PatternSpec("p", "AND", (), (), None)
    for _ in range(2):
        count = data.draw(st.integers(1, 20))
        ranks = st.lists(st.integers(0, n - 1), min_size=count, max_size=count)
        matches = Matches({"a": np.asarray(data.draw(ranks), dtype=np.int64),
                           "b": np.asarray(data.draw(ranks), dtype=np.int64)}, {}, count)
        shared = Table(table.ts, table.ids, table.types,
                       {**table.columns, ROW_COLUMN: pool_rows})
        lines = Renderer(shared, TYPE_ATTRS, store).match_array(spec, matches)
        assert records.lines_text(lines) == _reference(table, "p", matches)
        bound = np.concatenate(list(matches.single.values()))
        assert store.done[pool_rows[bound]].all()


def test_rebased_views_inline_and_out_of_line():
    """Views of two arrays laid out against one list of buffers: the second's long values
    (out of line, a buffer index) move by the first's buffers, its short ones (inline,
    12 bytes or fewer) stay as they are."""
    first = pa.array(["short", "a longer value than twelve", "", "x" * 500])
    second = pa.array(["tiny", "twelve bytes", "thirteen byte", "é" * 40, "ok"])
    views, buffers = _views(first)
    more, own = _views(second)
    laid = np.concatenate([views, _rebased(more, len(buffers))])
    order = np.asarray([5, 0, 6, 1, 8, 3, 7, 4, 2, 5], dtype=np.int64)
    values = first.to_pylist() + second.to_pylist()
    assert _strings(laid[order], [*buffers, *own]).to_pylist() == [values[i] for i in order]
