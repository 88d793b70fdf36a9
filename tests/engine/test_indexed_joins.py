"""Joins narrowed by their predicates (docs/matching.md, "Indexed joins"): the sliced index
finds exactly the candidates a brute-force scan finds; a predicate's bounds keep every
value the predicate keeps; with every look-up narrowed (any slice size) the matches are the
reference's, in the order of the unnarrowed run; a selective band join builds the rows it
keeps, not the window's cross product."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime import lookup, memory
from cepplan.engine_adapter.runtime.job import evaluate_partition, job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.workload.expr.bounds import bounds_of
from cepplan.workload.expr.vectorized import evaluate
from tests.engine.reference_matcher import reference_matches
from tests.engine.test_matcher_vs_reference import same_matches, with_orders
from tests.engine.workloads import TYPES, workload

JOINS = {
    "band": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
              "where": ["0 < c.v - a.v", "c.v - a.v < 3", "0 <= b.w - c.w", "b.w - c.w < 2"],
              "within": 4}],
    "abs": [{"name": "p", "structure": ["AND", "a:A", "b:B", "c:C"],
             "where": ["abs(a.w - b.w) < 1.5", "abs(c.v - b.v) <= 1"], "within": 3}],
    "equal": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:A"],
               "where": ["a.v == b.v", "c.w == b.w", "a.k == c.k"], "within": 4}],
    "less": [{"name": "p", "structure": ["SEQ", "a:A", "b:A", "c:A"],
              "where": ["a.w < b.w", "b.v <= c.v", "c.v > a.v"], "within": 3}],
    "moved_terms": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                     "where": ["-a.v < b.v - 3", "c.w + a.w >= 2 * b.w", "b.v - c.v == a.v"],
                     "within": 4}],
    "kleene_last": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
                     "where": ["LAST(b.v) >= a.v - 1", "c.w == a.w", "a.v <= b.v"],
                     "within": 3}],
    "not_between": [{"name": "p", "structure": ["SEQ", "a:A", ["NOT", "x:B"], "c:A"],
                     "where": ["a.v < c.v", "x.v == c.v", "c.w - a.w <= 1"], "within": 4}],
    "not_only": [{"name": "p", "structure": ["AND", "a:A", ["NOT", "x:B"], "c:C"],
                  "where": ["abs(x.w - a.w) < 1", "a.k == c.k"], "within": 3}],
}
MISSING = float("nan")
EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 5), st.integers(0, 4) | st.none(),
                  st.sampled_from([0.5, 2.0, 2.0, 3.5, MISSING]), st.sampled_from(["x", "y"]))


def frame(rows: list[tuple]) -> pd.DataFrame:
    """Canonical events whose `v` may be missing (NaN, as the reader gives a missing long)
    and `w` NaN."""
    return pd.DataFrame({"__type": [r[0] for r in rows],
                         "__ts": [float(r[1]) for r in rows],
                         "__id": list(range(len(rows))),
                         "v": [MISSING if r[2] is None else r[2] for r in rows],
                         "w": [r[3] for r in rows],
                         "k": [r[4] for r in rows]})


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.sampled_from([0.0, 1.0, 1.0, 2.5, 3.0, -1.0, MISSING, math.inf]),
                       max_size=30),
       size=st.integers(1, 5), data=st.data())
def test_sliced_index_finds_what_a_scan_finds(values, size, data):
    values = np.asarray(values, dtype=np.float64)
    index = lookup.SlicedIndex(values, size)
    rows = data.draw(st.integers(0, 6))
    low = np.asarray([data.draw(st.integers(0, len(values))) for _ in range(rows)], np.int64)
    high = np.asarray([data.draw(st.integers(0, len(values))) for _ in range(rows)], np.int64)
    bound = st.sampled_from([-math.inf, -1.0, 0.0, 1.0, 2.0, 3.0, math.inf])
    lower = np.asarray([data.draw(bound) for _ in range(rows)], dtype=np.float64)
    upper = np.asarray([data.draw(bound) for _ in range(rows)], dtype=np.float64)
    rank_low, rank_high = index.rank_ranges(lower, upper)
    expected = [(r, p) for r in range(rows) for p in range(low[r], max(low[r], high[r]))
                if lower[r] <= values[p] <= upper[r]]
    which, positions = index.pairs(low, high, rank_low, rank_high)
    assert list(zip(which.tolist(), positions.tolist(), strict=True)) == expected
    counts = index.counts(low, high, rank_low, rank_high)
    assert counts.tolist() == [sum(1 for r, _ in expected if r == row) for row in range(rows)]


PREDICATES = ["x.v < y.v", "y.v >= x.v", "x.v == y.v + y.w", "0 < x.v - y.v",
              "x.v - y.v < 3", "abs(x.v - y.v) < y.w", "abs(y.v - x.v) <= 2",
              "-x.v > y.w - 1", "y.w - (2 - x.v) <= y.v", "x.v + y.v > 1e15",
              "1 - x.v >= y.v * 0.5"]
NUMBER = st.floats(-1e16, 1e16) | st.integers(-5, 5).map(float) | st.just(MISSING)


@pytest.mark.parametrize("text", PREDICATES)
@settings(max_examples=150, deadline=None)
@given(xs=st.lists(NUMBER, min_size=1, max_size=8), ys=st.lists(NUMBER, min_size=2, max_size=2))
def test_bounds_keep_every_value_the_predicate_keeps(text, xs, ys):
    """Over doubles of any size, NaN included: where the predicate holds for x, x lies in
    the bounds `bounds_of` derives (widened by their rounding) — the look-up never drops a
    candidate the predicate keeps."""
    from cepplan.engine_adapter.runtime.matcher import MatchContext

    tree = _tree(text)
    bounds = bounds_of(tree, "x")
    assert bounds, text
    rows = len(xs)
    columns = {("x", "v"): np.asarray(xs), ("y", "v"): np.full(rows, ys[0]),
               ("y", "w"): np.full(rows, ys[1])}
    holds = np.asarray(evaluate(tree, columns, rows), dtype=bool)
    context = MatchContext.__new__(MatchContext)
    context.table = _OneRow(ys)
    lower, upper = context._value_range(bounds, {"y": np.zeros(rows, np.int64)}, rows)
    inside = (lower <= np.asarray(xs)) & (np.asarray(xs) <= upper)
    assert not (holds & ~inside).any(), (text, xs, ys, lower, upper)


def test_predicates_that_do_not_bound_one_attribute_are_not_used():
    for text in ["x.v * 2 < y.v", "abs(x.v - y.v) > 1", "x.v != y.v", "x.v - x.w < y.v",
                 "x.v < y.v or x.v > y.w", "max(x.v, y.v) < 3"]:
        assert bounds_of(_tree(text), "x") == [], text


@pytest.mark.parametrize("template", sorted(JOINS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=14), chunk=st.integers(1, 6), size=st.integers(1, 3),
       data=st.data())
def test_narrowed_joins_give_the_reference_matches_in_the_unnarrowed_order(
        template, rows, chunk, size, data):
    ties = data.draw(st.sampled_from(["strict", "allow"]))
    wl = workload(JOINS[template], seq_ties=ties)
    events = frame(rows)
    job = job_from_json(job_data(wl, with_orders(trivial_plan(wl), wl, data)))
    assert_narrowed_as_plain(wl, events, job, chunk, size)


def assert_narrowed_as_plain(wl, events: pd.DataFrame, job, chunk: int, size: int) -> None:
    """With every look-up narrowed (slices of `size`), the matches are the reference's, and
    the unnarrowed run's in the same order."""
    plain = run_local(events, job, chunk_events=chunk)
    with pytest.MonkeyPatch.context() as patch:
        _narrow_always(patch, size)
        narrowed = run_local(events, job, chunk_events=chunk)
    same_matches(narrowed.matches, reference_matches(wl, events))
    assert narrowed.matches == plain.matches  # the same matches in the same order
    assert narrowed.cap_hits == plain.cap_hits and narrowed.held_back == plain.held_back


def test_narrowed_look_ups_run_on_these_templates(monkeypatch):
    """The property test above exercises the index: on a dense stream each template's
    joins (`not_only`: its negation alone) are narrowed (counted at the index's look-up)."""
    found = []
    real = lookup.SlicedIndex.pairs

    def counted(self, *args):
        out = real(self, *args)
        found.append(len(out[0]))
        return out

    monkeypatch.setattr(lookup.SlicedIndex, "pairs", counted)
    _narrow_always(monkeypatch, 2)
    rng = np.random.default_rng(3)
    rows = [(str(rng.choice(TYPES)), int(rng.integers(0, 10)), int(rng.integers(0, 5)),
             float(rng.choice([0.5, 2.0, 3.5])), str(rng.choice(["x", "y"])))
            for _ in range(60)]
    for template in JOINS:
        found.clear()
        wl = workload(JOINS[template])
        events = frame(rows)
        result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
        same_matches(result.matches, reference_matches(wl, events))
        assert found and sum(found) > 0, template


def test_a_band_join_builds_the_rows_it_keeps_not_the_cross_product(monkeypatch):
    """SEQ(a:A, c:A) with 0 < c.v - a.v < 3 over 3,000 events in one window (values
    uniform over 10,000: 2 in 10,000 pairs match): with pieces of 4,096 rows, the cross
    product (4.5 million pairs) was cut into about 1,100 pieces; narrowed by the band, the
    join builds a few thousand rows in one piece. Matches equal a brute-force count."""
    rng = np.random.default_rng(7)
    count = 3000
    values = rng.integers(0, 10_000, count)
    events = pd.DataFrame({"__type": ["A"] * count, "__ts": np.arange(count, dtype=float),
                           "__id": np.arange(count), "v": values,
                           "w": np.zeros(count), "k": ["x"] * count})
    wl = workload([{"name": "p", "structure": ["SEQ", "a:A", "c:A"],
                    "where": ["0 < c.v - a.v", "c.v - a.v < 3"], "within": count}])
    job = job_from_json(job_data(wl, trivial_plan(wl)))
    monkeypatch.setattr(memory, "MIN_PIECE_ROWS", 4096)
    monkeypatch.setattr(memory, "MAX_PIECE_ROWS", 4096)
    out = evaluate_partition(events, job, job.patterns[0])
    later = values[None, :] - values[:, None]
    expected = int(np.count_nonzero(np.triu((later > 0) & (later < 3), 1)))
    assert out.count == expected > 0
    assert out.splits == 0


@pytest.mark.parametrize("seed", range(4))
def test_shared_plans_narrowed_give_the_reference_matches(seed, monkeypatch):
    """The shared plan's joins from a node's partial matches narrow the same way."""
    from cepplan.search.synthetic import synthetic_workload
    from cepplan.workload.loader import build_workload
    from tests.engine.test_shared_plan import _canonical, _events, _shared_job

    wl = build_workload(synthetic_workload(10, avg_size=3.0, n_types=5, seed=seed,
                                           window_s=3, max_size=4))
    job = _shared_job(wl)
    events = _events([f"T{i:02d}" for i in range(5)], 70, seed, 25.0)
    plain = run_local(events, job, share=True)
    _narrow_always(monkeypatch, 2)
    narrowed = run_local(events, job, share=True)
    assert _canonical(narrowed) == _canonical(plain)
    same_matches(narrowed.matches, reference_matches(wl, events))


class _OneRow:
    """A table of one event whose `v` and `w` are given (the bound variable y's)."""

    def __init__(self, ys):
        self.values = {"v": np.asarray([ys[0]]), "w": np.asarray([ys[1]])}

    def column(self, attr):
        return self.values[attr]


def _tree(text: str) -> list:
    from cepplan.workload.expr.parser import parse
    from cepplan.workload.expr.portable import to_portable

    return to_portable(parse(text))


def _narrow_always(patch: pytest.MonkeyPatch, size: int) -> None:
    patch.setattr(lookup, "MIN_RANGE", 0)
    patch.setattr(lookup, "MAX_SHARE", math.inf)
    patch.setattr(lookup, "MIN_SLICE", size)
    patch.setattr(lookup, "MAX_SLICE", size)
