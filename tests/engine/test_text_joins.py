"""Joins narrowed by `==` between text attributes (docs/matching.md, "Indexed joins"): with
every look-up narrowed, the matches over streams of repeated and distinct strings (unicode,
empty, missing) are the brute-force reference's, in the order of the unnarrowed run; a
selective join on a string id builds the rows it keeps, not the window's cross product; the
text codes number equal values alike across columns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime import memory
from cepplan.engine_adapter.runtime.job import evaluate_partition, job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.engine_adapter.runtime.table import Table
from cepplan.engine_adapter.runtime.text_codes import ABSENT, TextCodes
from cepplan.planner.plan import trivial_plan
from cepplan.workload import build_workload
from tests.engine.reference_matcher import reference_matches
from tests.engine.test_indexed_joins import _narrow_always, assert_narrowed_as_plain
from tests.engine.test_matcher_vs_reference import same_matches, with_orders

TYPES = ("A", "B", "C")
JOINS = {
    "equal": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
               "where": ["a.k == c.k", "b.j == a.k"], "within": 4}],
    "with_band": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"],
                   "where": ["a.k == b.k", "0 < b.v - a.v", "b.v - a.v < 3"], "within": 4}],
    "and_two_columns": [{"name": "p", "structure": ["AND", "a:A", "b:B", "c:C"],
                         "where": ["a.j == b.k", "c.k == b.k and c.j == a.k"], "within": 3}],
    "kleene_last": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
                     "where": ["LAST(b.k) == a.k", "c.j == a.j"], "within": 3}],
    "not_between": [{"name": "p", "structure": ["SEQ", "a:A", ["NOT", "x:B"], "c:A"],
                     "where": ["a.k == c.k", "x.k == c.j"], "within": 4}],
    "unequal": [{"name": "p", "structure": ["SEQ", "a:A", "c:A"],
                 "where": ["a.k != c.k", "a.j == c.j"], "within": 4}],
}
MISSING = float("nan")  # as a pandas frame holds a missing string; the reader gives None
TEXT = st.sampled_from(["", "x", "x", "y", "é", "e\u0301", "日本", "ID-0", None, MISSING])
EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 5), st.integers(0, 4), TEXT, TEXT)


def text_workload(patterns: list[dict], seq_ties: str = "strict"):
    """Types A, B, C with v: long and two text attributes k, j."""
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "long", "k": "string", "j": "string"}}
                        for t in TYPES},
        "options": {"seq_ties": seq_ties},
        "patterns": patterns})


def frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame({"__type": [r[0] for r in rows], "__ts": [float(r[1]) for r in rows],
                         "__id": list(range(len(rows))), "v": [r[2] for r in rows],
                         "k": pd.Series([r[3] for r in rows], dtype=object),
                         "j": pd.Series([r[4] for r in rows], dtype=object)})


@pytest.mark.parametrize("template", sorted(JOINS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=14), chunk=st.integers(1, 6), size=st.integers(1, 3),
       data=st.data())
def test_text_joins_narrowed_give_the_reference_matches_in_the_unnarrowed_order(
        template, rows, chunk, size, data):
    wl = text_workload(JOINS[template], data.draw(st.sampled_from(["strict", "allow"])))
    events = frame(rows)
    job = job_from_json(job_data(wl, with_orders(trivial_plan(wl), wl, data)))
    assert_narrowed_as_plain(wl, events, job, chunk, size)


def test_text_look_ups_are_narrowed_on_these_templates(monkeypatch):
    """The property test above exercises the index on text: on a dense stream, each
    template looks a text attribute up by its codes (`unequal` only `j`: `!=` cannot narrow)."""
    found = []
    real = TextCodes.column

    def asked(self, attr):
        codes = real(self, attr)
        found.append(attr if codes is not None else None)
        return codes

    monkeypatch.setattr(TextCodes, "column", asked)
    _narrow_always(monkeypatch, 2)
    rng = np.random.default_rng(5)
    texts = ["", "x", "y", "日本", None]
    rows = [(str(rng.choice(TYPES)), int(rng.integers(0, 10)), int(rng.integers(0, 5)),
             texts[rng.integers(0, 5)], texts[rng.integers(0, 5)]) for _ in range(60)]
    events = frame(rows)
    for template, patterns in JOINS.items():
        found.clear()
        wl = text_workload(patterns)
        result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
        same_matches(result.matches, reference_matches(wl, events))
        looked_up = {attr for attr in found if attr}
        assert looked_up == {"j"} if template == "unequal" else looked_up, template


def test_a_join_on_a_string_id_builds_the_rows_it_keeps_not_the_cross_product(monkeypatch):
    """SEQ(a:A, c:A) with a.user == c.user over 3,000 events in one window, 3,000 users: the
    cross product (4.5 million pairs) was cut into about 1,100 pieces of 4,096 rows; looked
    up by the user's code, the join builds a few thousand rows in one piece. Matches equal
    a brute-force count over the strings."""
    rng = np.random.default_rng(11)
    count = 3000
    users = np.array([f"user-{n}" for n in rng.integers(0, 3000, count)], dtype=object)
    events = pd.DataFrame({"__type": ["A"] * count, "__ts": np.arange(count, dtype=float),
                           "__id": np.arange(count), "v": np.zeros(count, dtype=np.int64),
                           "k": users, "j": users})
    wl = text_workload([{"name": "p", "structure": ["SEQ", "a:A", "c:A"],
                         "where": ["a.k == c.k"], "within": count}])
    job = job_from_json(job_data(wl, trivial_plan(wl)))
    monkeypatch.setattr(memory, "MIN_PIECE_ROWS", 4096)
    monkeypatch.setattr(memory, "MAX_PIECE_ROWS", 4096)
    out = evaluate_partition(events, job, job.patterns[0])
    same = users[:, None] == users[None, :]
    assert out.count == int(np.count_nonzero(np.triu(same, 1))) > 0
    assert out.splits == 0


def test_text_codes_number_equal_values_alike_across_columns():
    strings = np.array(["a", "", None, "日本", "a", MISSING], dtype=object)
    other = np.array(["日本", "b", None, ""], dtype=object)
    table = Table(np.arange(6.0), np.arange(6), np.array(["A"] * 6, dtype=object),
                  {"k": strings, "j": np.concatenate([other, other[:2]]),
                   "v": np.arange(6.0), "o": np.array([1, 2, 3, 1, 2, 3], dtype=object)})
    codes = TextCodes(table)
    k, j = codes.column("k"), codes.column("j")
    for first, column in ((strings, k), (table.columns["j"], j)):
        for x, y, cx, cy in zip(first, strings, column, k, strict=True):
            if isinstance(x, str) or x is None:
                assert (cx == cy) == (x == y), (x, y)
    assert codes.column("v") is None and codes.column("o") is None  # not text
    assert codes.of(np.array(["日本", "zz", 3], dtype=object)).tolist() == [k[3], ABSENT,
                                                                           ABSENT]
    assert not math.isnan(float(k[5]))  # a NaN has a code, equal to no other value's
    assert k[5] not in set(k[:5].tolist())


@pytest.mark.parametrize(("band", "narrowed_by"), [(5000, "k"), (3, "v")])
def test_a_look_up_bounded_on_two_attributes_narrows_by_the_one_keeping_fewer(
        monkeypatch, band, narrowed_by):
    """SEQ(a:A, c:A) with a.k == c.k (10 ids: a tenth of the pairs) and 0 < c.v - a.v < band
    (v uniform over 10,000: over a third, or 3 in 10,000, of the pairs): the look-up
    narrows by the attribute keeping fewer; the matches equal a brute-force count."""
    from cepplan.engine_adapter.runtime.matcher import MatchContext

    chosen = []
    real = MatchContext._narrowing

    def spied(self, *args):
        found = real(self, *args)
        if found is not None:
            chosen.extend(key[1] for key, index in self.indexes.items() if index is found[0])
        return found

    monkeypatch.setattr(MatchContext, "_narrowing", spied)
    rng = np.random.default_rng(2)
    count = 2000
    ids = np.array([f"id-{n}" for n in rng.integers(0, 10, count)], dtype=object)
    values = rng.integers(0, 10_000, count)
    events = pd.DataFrame({"__type": ["A"] * count, "__ts": np.arange(count, dtype=float),
                           "__id": np.arange(count), "v": values, "k": ids, "j": ids})
    wl = text_workload([{"name": "p", "structure": ["SEQ", "a:A", "c:A"],
                         "where": ["a.k == c.k", "0 < c.v - a.v", f"c.v - a.v < {band}"],
                         "within": count}])
    job = job_from_json(job_data(wl, trivial_plan(wl)))
    out = evaluate_partition(events, job, job.patterns[0])
    later = values[None, :] - values[:, None]
    kept = (ids[:, None] == ids[None, :]) & (later > 0) & (later < band)
    assert out.count == int(np.count_nonzero(np.triu(kept, 1))) > 0
    assert set(chosen) == {narrowed_by}


def test_a_shared_node_joined_on_a_string_narrows_as_alone():
    """Two patterns sharing the node SEQ(a:A, b:B) with a.k == b.k: the shared plan's join,
    every look-up narrowed, gives the reference's matches, as unnarrowed."""
    from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
    from tests.engine.test_shared_plan import _canonical, _shared_job

    wl = build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "long", "k": "string", "j": "string"}}
                        for t in TYPES},
        "statistics": {"rates": dict.fromkeys(TYPES, 1.0)},
        "patterns": [{"name": name, "structure": ["SEQ", "a:A", "b:B", "c:C"],
                      "where": ["a.k == b.k", last], "within": 5}
                     for name, last in (("p", "b.j == c.j"), ("q", "c.v > 2"))]})
    job = _shared_job(wl)
    assert set(sharing_plan(job).uses) == {"p", "q"}
    rng = np.random.default_rng(1)
    texts = ["", "x", "y", "日本"]
    events = frame([(str(rng.choice(TYPES)), int(rng.integers(0, 30)), int(rng.integers(0, 5)),
                     texts[rng.integers(0, 4)], texts[rng.integers(0, 4)])
                    for _ in range(120)])
    plain = run_local(events, job, share=True)
    with pytest.MonkeyPatch.context() as patch:
        _narrow_always(patch, 2)
        narrowed = run_local(events, job, share=True)
    assert _canonical(narrowed) == _canonical(plain)
    same_matches(narrowed.matches, reference_matches(wl, events))
    assert all(narrowed.matches.values())
