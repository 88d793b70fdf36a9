"""Times written back as the input wrote them (`sources.time_text`): Python's own text of an
instant, read by the in-process reader (`parse_times`) and written back, is that text again
(dates across leap days and centuries, fractions to the pattern's digits, a zone offset as
UTC's)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.sources.time_format import parse_times
from cepplan.sources.time_text import time_formatter

# pattern -> Python's spelling of it (UTC), with the fraction digits the pattern shows
PATTERNS = {"yyyy-MM-dd HH:mm:ss": ("%Y-%m-%d %H:%M:%S", 0),
            "yyyy-MM-dd'T'HH:mm:ss.SSSXXX": ("%Y-%m-%dT%H:%M:%S.{f}Z", 3),
            "dd/MM/yy HH:mm:ss.SSSSSS": ("%d/%m/%y %H:%M:%S.{f}", 6),
            "yyyyMMddHHmmssZ": ("%Y%m%d%H%M%S+0000", 0)}


@settings(max_examples=300)
@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
       st.sampled_from(sorted(PATTERNS)), st.sampled_from(["s", "ms"]))
def test_a_time_read_is_written_as_it_was_read(local, pattern, unit):
    shown_format, digits = PATTERNS[pattern]
    moment = local.replace(tzinfo=UTC)
    moment = moment.replace(microsecond=moment.microsecond // 10 ** (6 - digits)
                            * 10 ** (6 - digits))  # a time the pattern can show exactly
    text = moment.strftime(shown_format.replace("{f}", f"{moment.microsecond:06d}"[:digits]))
    if "yy " in pattern and not 2000 <= moment.year < 2100:
        return  # `yy` reads years 2000-2099, as Spark's parser does
    read = parse_times([text], pattern, unit)
    assert abs(read[0] / (1000 if unit == "ms" else 1) - moment.timestamp()) < 1e-6
    assert time_formatter(pattern, unit)(read).to_pylist() == [text]


def test_a_missing_time_is_null():
    written = time_formatter("yyyy-MM-dd", "s")(np.array([np.nan, 0.0]))
    assert written.to_pylist() == [None, "1970-01-01"]


def test_messages_write_times_as_the_user_reads_them():
    """A time in a message (the end-of-input warning): the input's own text with a
    `time_format`, else the number to the unit (formerly `:g`: 1.70917e+09, an hour off)."""
    from cepplan.engine_adapter.metrics_table import run_warnings
    from cepplan.sources.time_text import time_writer

    metrics = {"input_span": [1709164800.25, 1709168400.5], "negation_held_back": {"p": 2}}
    iso = run_warnings(metrics, 5, time_writer("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "s"))
    assert "(2024-02-29T00:00:00.250Z to 2024-02-29T01:00:00.500Z)" in iso[0]
    plain = run_warnings(metrics, 5, time_writer(None, "s"))
    assert "(ts 1709164800.25 to ts 1709168400.5)" in plain[0]
