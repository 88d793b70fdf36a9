"""Arrow values cast to the workload's types (double, long, bool, string) with Spark's
try_cast rules, so the in-process reader keeps and rejects the same values as Spark's."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:  # imported where a pandas series is built
    import pandas as pd


_DOUBLE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?$")
_SPECIAL = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
            "-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan, "+nan": math.nan,
            "-nan": math.nan}
_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}
_INT64 = 2 ** 63


def _strip(array: pa.Array) -> pa.Array:
    """Java's trim: whitespace and control characters at both ends."""
    return pc.utf8_trim(array, characters="".join(chr(c) for c in range(33)))


def _plain_cast(array: pa.Array, kind: str) -> np.ndarray | None:
    """The common case cheaply: every value a number Arrow's cast reads, which is in the
    syntax Spark's cast accepts (Arrow reads a subset of `_DOUBLE` and the special literals,
    and of the long syntax except hexadecimal, excluded here); None when some value needs the
    trimming and checking path."""
    if kind == "long" and pc.any(pc.match_substring(array, "x", ignore_case=True)).as_py():
        return None
    try:
        return pc.cast(array, pa.int64() if kind == "long" else pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _string_to_double(array: pa.Array) -> np.ndarray:
    fast = _plain_cast(array, "double")
    if fast is not None:
        return (fast.to_numpy(zero_copy_only=False),
                ~pc.is_null(fast).to_numpy(zero_copy_only=False))
    text = _strip(array)
    out = np.full(len(text), np.nan)
    valid = np.zeros(len(text), dtype=bool)
    good = pc.fill_null(pc.match_substring_regex(text, _DOUBLE.pattern), False)
    good_np = good.to_numpy(zero_copy_only=False)
    if good_np.any():
        numbers = pc.utf8_rtrim(pc.filter(text, good), characters="dDfF")
        out[good_np] = pc.cast(numbers, pa.float64()).to_numpy(zero_copy_only=False)
        valid |= good_np
    rest = np.flatnonzero(~good_np & ~pc.is_null(text).to_numpy(zero_copy_only=False))
    for index in rest:  # the special literals, case-insensitive, as Spark's cast
        value = _SPECIAL.get(text[int(index)].as_py().lower())
        if value is not None:
            out[index], valid[index] = value, True
    return np.where(valid, out, np.nan), valid


def _string_to_long(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    fast = _plain_cast(array, "long")
    if fast is not None:
        ok = ~pc.is_null(fast).to_numpy(zero_copy_only=False)
        return pc.fill_null(fast, 0).to_numpy(zero_copy_only=False), ok
    text = _strip(array)
    good = pc.fill_null(pc.match_substring_regex(text, r"^[+-]?\d{1,19}$"), False)
    good_np = good.to_numpy(zero_copy_only=False)
    out = np.zeros(len(text), dtype=np.int64)
    if good_np.any():
        digits = pc.filter(text, good)
        long_ones = pc.greater_equal(pc.utf8_length(digits), 19).to_numpy(zero_copy_only=False)
        if long_ones.any():  # near the int64 limit: check in Python, few values
            checked = np.array([-_INT64 <= int(v) < _INT64 for v in
                                np.asarray(digits.to_pylist(), dtype=object)[long_ones]])
            keep = np.ones(len(digits), dtype=bool)
            keep[np.flatnonzero(long_ones)[~checked]] = False
            good_np[np.flatnonzero(good_np)[~keep]] = False
            digits = pc.filter(digits, pa.array(keep))
        out[good_np] = pc.cast(pc.utf8_ltrim(digits, characters="+"),
                               pa.int64()).to_numpy(zero_copy_only=False)
    return out, good_np


def _string_to_bool(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    text = pc.utf8_lower(_strip(array))
    true = pc.fill_null(pc.is_in(text, pa.array(sorted(_TRUE))), False)
    false = pc.fill_null(pc.is_in(text, pa.array(sorted(_FALSE))), False)
    true_np = true.to_numpy(zero_copy_only=False)
    return true_np, true_np | false.to_numpy(zero_copy_only=False)


def _float_to_long(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Truncation toward zero; NaN, infinities and out-of-range values are NULL."""
    ok = np.isfinite(values) & (values >= -(2.0 ** 63)) & (values < 2.0 ** 63)
    return np.where(ok, np.trunc(np.where(ok, values, 0)), 0).astype(np.int64), ok


def cast_values(array: pa.ChunkedArray | pa.Array, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """`array` as the workload type `kind` (double, long, bool, string) with Spark's try_cast
    rules, as NumPy, and which values are not NULL (a value that cannot be cast is NULL; NaN
    is a double): float64 (NaN where NULL), int64 (0 where NULL), bool, or objects (None)."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    present = ~pc.is_null(array).to_numpy(zero_copy_only=False)
    typ = array.type
    if kind == "string":
        return as_strings(array), present
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        if kind == "double":
            values, ok = _string_to_double(array)
        elif kind == "long":
            values, ok = _string_to_long(array)
        else:
            values, ok = _string_to_bool(array)
    elif pa.types.is_boolean(typ):
        values = array.to_numpy(zero_copy_only=False).astype(bool, copy=False) & present
        ok = present
        values = values.astype(float if kind == "double" else np.int64 if kind == "long"
                               else bool)
    elif pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        numbers = pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False)
        if kind == "double":
            values, ok = numbers, present
        elif kind == "long":
            if pa.types.is_integer(typ):
                values = pc.cast(pc.fill_null(array, 0), pa.int64()).to_numpy(
                    zero_copy_only=False)
                ok = present
            else:
                values, ok = _float_to_long(numbers)
                ok &= present
        else:
            values, ok = numbers != 0, present
    else:
        values, ok = cast_values(pa.array(as_strings(array), pa.string()), kind)
        return values, ok & present
    ok = ok & present
    if kind == "double":
        return np.where(ok, values, np.nan), ok
    return values, ok


def pandas_values(values: np.ndarray, ok: np.ndarray, kind: str) -> pd.Series:
    import pandas as pd

    if kind == "string":
        return pd.Series(values, dtype=object)
    if kind == "double":
        return pd.Series(values, dtype=np.float64)
    dtype = "Int64" if kind == "long" else "boolean"
    return pd.Series(pd.array(values, dtype=dtype)).mask(~ok)


def as_strings(array: pa.Array) -> np.ndarray:
    """Values as Spark's cast to string gives them (booleans `true`/`false`)."""
    typ = array.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return array.to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(typ):
        return np.array([None if v is None else ("true" if v else "false")
                         for v in array.to_pylist()], dtype=object)
    return pc.cast(array, pa.string()).to_numpy(zero_copy_only=False)
