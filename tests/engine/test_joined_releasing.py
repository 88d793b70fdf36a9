"""The pool built from the parts read (`table.joined_releasing`): the parts' rows one after
the other, while each part's columns are released as they are joined, so the tagged rows are
never held twice (parts and pool) through the build and the match."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.runtime.table import Columns, joined_releasing
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

TAG = "p\tv0"  # a tag column as the engine names them


def _part(start: int, rows: int, whole: bool) -> Columns:
    """`rows` tagged events from id `start`; `whole`: numbers written as whole doubles."""
    ids = np.arange(start, start + rows, dtype=np.int64)
    return Columns({EVENT_TYPE: np.array(["A", "B"], dtype=object)[ids % 2],
                    EVENT_TS: ids * 0.5, EVENT_ID: ids,
                    "size": ids.astype(np.float64 if whole else np.int64),
                    TAG: ids % 3 == 0})


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), min_size=1, max_size=6))
def test_pool_is_the_parts_in_order_and_the_parts_are_released(shapes):
    parts, start = [], 0
    for rows, whole in shapes:
        parts.append(_part(start, rows, whole))
        start += rows
    held = list(parts)
    pool = joined_releasing(held, [EVENT_ID])
    assert held == []
    assert len(pool) == start
    ids = np.arange(start)
    assert list(pool[EVENT_ID]) == list(ids)
    assert list(pool[EVENT_TS]) == list(ids * 0.5)
    assert list(pool[EVENT_TYPE]) == ["A" if i % 2 == 0 else "B" for i in ids]
    assert list(pool[TAG]) == [i % 3 == 0 for i in ids]
    assert [int(v) for v in pool["size"]] == list(ids)
    if len(parts) > 1:  # every part's columns went into the pool and left the part
        assert all(part.data == {} for part in parts)
