"""The in-process reader's cheap paths against its checking paths (which
test_local_vs_spark.py holds to Spark's): times read from the string buffer and once per run
of equal stamps against the regular expression, numbers cast by Arrow against the trimming
and checking casts, on random values near the patterns' shapes."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from cepplan.sources import time_format, try_cast

PATTERNS = [("yyyyMMddHHmm", "min"), ("yyyy-MM-dd HH:mm:ss", "s"), ("yy/MM/dd'T'HH", "h"),
            ("dd.MM.yyyy", "d"), ("yyyy-MM-dd HH:mm:ss.SSS", "ms")]


def _stamp(rng: random.Random, pattern: str) -> str | None:
    """A value shaped like `pattern`, sometimes broken: a digit or separator changed, a
    character added or removed, an impossible date, or missing."""
    if rng.random() < 0.03:
        return None
    fields = {"yyyy": f"{rng.choice([1999, 2000, 2024, 2100, 9999]):04d}",
              "yy": f"{rng.randrange(100):02d}", "MM": f"{rng.randrange(0, 14):02d}",
              "dd": f"{rng.randrange(0, 33):02d}", "HH": f"{rng.randrange(0, 25):02d}",
              "mm": f"{rng.randrange(0, 61):02d}", "ss": f"{rng.randrange(0, 61):02d}",
              "SSS": f"{rng.randrange(1000):03d}"}
    text = pattern.replace("'T'", "T")
    for token in sorted(fields, key=len, reverse=True):
        text = text.replace(token, fields[token])
    if rng.random() < 0.2:
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice("0123456789-: x/é") + text[at + rng.choice([0, 1]):]
    return text


@pytest.mark.parametrize("pattern,unit", PATTERNS)
def test_time_fast_paths_equal_the_regex(monkeypatch, pattern, unit):
    rng = random.Random(pattern)
    values = [_stamp(rng, pattern) for _ in range(3000)]
    runs = [v for v in values[:500] for _ in range(rng.choice([1, 3, 10]))]  # repeated stamps
    for texts in (values, runs, [next(v for v in values if v)] * 7):
        array = pa.array(texts, pa.string())
        fast = time_format.time_parser(pattern, unit)(array)
        with monkeypatch.context() as patch:
            patch.setattr(time_format, "_fixed_layout", lambda _pattern: None)
            patch.setattr(time_format, "_run_starts", lambda _text: None)
            slow = time_format.time_parser(pattern, unit)(array)
        assert np.array_equal(fast, slow, equal_nan=True)
    parsed = time_format.time_parser(pattern, unit)(pa.array(values, pa.string()))
    assert np.isfinite(parsed).sum() > len(values) // 10  # the random values do parse, mostly


NUMBERS = ["1", "-2", "+3", "007", "1.5", "-.5", "2.", "1e3", "1E-2", "+1e+2", "NaN", "nan",
           "inf", "-Infinity", "1d", " 4 ", "0x10", "1_0", "", "abc", "9223372036854775807",
           "9223372036854775808", "-9223372036854775808", "1.5f", "٣"]


@pytest.mark.parametrize("kind", ["double", "long"])
def test_plain_casts_equal_the_checking_casts(monkeypatch, kind):
    rng = random.Random(kind)
    batches = [[rng.choice(NUMBERS[:13]) for _ in range(50)] for _ in range(10)]  # all Arrow's
    batches += [[rng.choice(NUMBERS) if rng.random() < 0.9 else None for _ in range(200)]
                for _ in range(20)]
    for texts in batches:
        array = pa.array(texts, pa.string())
        fast = try_cast.cast_values(array, kind)
        with monkeypatch.context() as patch:
            patch.setattr(try_cast, "_plain_cast", lambda _array, _kind: None)
            slow = try_cast.cast_values(array, kind)
        assert np.array_equal(fast[1], slow[1]), texts
        assert np.array_equal(fast[0][fast[1]], slow[0][slow[1]], equal_nan=True), texts
