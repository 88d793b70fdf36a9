"""Precision, recall and disparity (seed 000 eq. 1–3) against their definitions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.costmodels.qor import disparity, meets, precision, precision_recall, recall

ids = st.sets(st.integers(0, 40), max_size=25)
point = st.tuples(st.integers(0, 10), st.integers(0, 10))
box = st.tuples(st.integers(0, 10), st.integers(0, 10), st.integers(0, 10),
                st.integers(0, 10)).map(lambda b: (min(b[0], b[2]), min(b[1], b[3]),
                                                   max(b[0], b[2]), max(b[1], b[3])))


@given(ids, ids)
def test_precision_and_recall_count_the_shared_events(needed, used):
    common = sum(1 for e in used if e in needed)
    assert precision(needed, used) == (common / len(used) if used else 1.0)
    assert recall(needed, used) == (common / len(needed) if needed else 1.0)
    assert 0 <= precision(needed, used) <= 1 and 0 <= recall(needed, used) <= 1
    # swapping roles swaps the two measures
    if needed and used:
        assert precision(needed, used) == recall(used, needed)


@given(ids, ids)
def test_array_form_equals_set_form(needed, used):
    p, r = precision_recall(np.array(sorted(needed), dtype=np.int64),
                            np.array(sorted(used), dtype=np.int64))
    assert (p, r) == (precision(needed, used), recall(needed, used))


@given(ids)
def test_a_selection_standing_in_for_itself_is_perfect(events):
    assert precision(events, events) == 1.0 and recall(events, events) == 1.0


@given(st.lists(point, max_size=20), st.lists(box, min_size=1, max_size=4))
@settings(max_examples=200)
def test_disparity_averages_interest_membership(points, regions):
    xs = np.array([p[0] for p in points], dtype=float)
    ys = np.array([p[1] for p in points], dtype=float)
    members = [sum(1 for (x1, y1, x2, y2) in regions if x1 <= x <= x2 and y1 <= y <= y2)
               for x, y in points]
    expected = sum(members) / (len(points) * len(regions)) if points else 1.0
    assert disparity(xs, ys, regions) == expected
    assert 0 <= disparity(xs, ys, regions) <= 1


def test_disparity_of_the_seed_example_is_near_one_half():
    # Two hardly overlapping interests, events spread over both: each event lies in one of two.
    xs, ys = np.array([1.0, 2.0, 8.0, 9.0]), np.array([1.0, 1.0, 1.0, 1.0])
    assert disparity(xs, ys, [(0, 0, 5, 5), (6, 0, 10, 5)]) == 0.5
    assert disparity(xs, ys, [(0, 0, 10, 5)]) == 1.0


def test_thresholds_are_met_at_equality():
    assert meets(0.8, 0.8, 0.5, (0.8, 0.8, 0.5))
    assert not meets(0.79, 0.8, 1.0, (0.8, 0.8, None))
    assert meets(1.0, 1.0, 0.1, (1.0, 1.0, None))
