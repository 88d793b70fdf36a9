"""A live stream's checkpoint keeps the retained events' columns exactly: strings with
missing values, Python values of a JSON source (numbers, booleans, NaN) beside strings,
floats with NaN, integers and booleans come back value for value and type for type."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from cepplan.engine_adapter.local.checkpoint import _from_arrow, _to_arrow

VALUES = st.one_of(st.text(max_size=8), st.none(), st.booleans(),
                   st.integers(-(2**62), 2**62), st.floats(allow_infinity=False))


def _same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


@given(st.lists(VALUES, max_size=30))
def test_python_values_come_back_exactly(values):
    column = np.empty(len(values), dtype=object)
    column[:] = values
    name, array = _to_arrow("attr", column)
    back = _from_arrow(name, pa.chunked_array([array], array.type))
    assert back.dtype == object and len(back) == len(values)
    assert all(_same(a, b) for a, b in zip(values, back, strict=True))


@given(st.lists(st.floats(allow_infinity=False), max_size=30),
       st.lists(st.booleans(), max_size=30))
def test_numeric_columns_come_back_exactly(floats, flags):
    for column in (np.array(floats, dtype=np.float64), np.array(flags, dtype=bool),
                   np.arange(len(floats), dtype=np.int64)):
        name, array = _to_arrow("c", column)
        back = _from_arrow(name, pa.chunked_array([array], array.type))
        assert back.dtype == column.dtype
        np.testing.assert_array_equal(back, column)
