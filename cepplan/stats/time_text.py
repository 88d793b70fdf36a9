"""Times written back as the input wrote them: numbers in `time_unit` since the epoch as text in
the source's `time_format`, the inverse of `time_format.time_parser` (for the matches' time
columns, docs/engine.md "Matches as Parquet"). UTC throughout, as the reader: a zone offset in
the pattern is written as UTC's (`Z`, `+00`, `+0000`, `+00:00`), as Spark's formatter writes
it in a UTC session. Imports only pyarrow, NumPy and the standard library (shipped in the
Spark job's zip).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepplan.stats.time_format import _TOKEN, _zone, time_format_regex
from cepplan.workload.durations import SECONDS_PER_UNIT

_UTC = {"X": "Z", "x": ("+00", "+0000", "+00:00", "+0000", "+00:00"), "Z": "+0000"}


def time_formatter(pattern: str, time_unit: str) -> Callable[[np.ndarray], pa.Array]:
    """The function writing times in `time_unit` with `pattern` (NaN: null). Reads the letters
    `time_parser` reads (else `TimeFormatError`): `yyyy` four digits, `yy` the year's last
    two, fractions `S..` their first n digits (to the microsecond), each time rounded to the
    finest field the pattern shows."""
    time_format_regex(pattern)  # the parser's letters, or TimeFormatError
    tokens = [m.group(0) for m in _TOKEN.finditer(pattern)]
    shown = min(6, max((len(t) for t in tokens if t[0] == "S"), default=0))
    per_tick = 1e6 * SECONDS_PER_UNIT[time_unit] / 10 ** (6 - shown)

    def write(times: np.ndarray) -> pa.Array:
        """Each distinct time written once (times repeat: a match's events, Kleene lists)."""
        distinct, where = np.unique(np.asarray(times, dtype=np.float64), return_inverse=True)
        return written(distinct).take(pa.array(where.reshape(-1), pa.int64()))

    def written(times: np.ndarray) -> pa.Array:
        known = np.isfinite(times)
        ticks = np.round(np.where(known, times, 0.0).astype(np.longdouble)
                         * np.longdouble(per_tick)).astype(np.int64)
        seconds = np.floor_divide(ticks, 10 ** shown)
        fraction = _padded(ticks - seconds * 10 ** shown, shown) if shown else None
        days = np.floor_divide(seconds, 86400)
        clock = seconds - days * 86400
        year, month, day = _civil_from_days(days)
        fields = {"yyyy": (year, 4), "yy": (year % 100, 2), "MM": (month, 2), "dd": (day, 2),
                  "HH": (clock // 3600, 2), "mm": (clock // 60 % 60, 2), "ss": (clock % 60, 2)}
        pieces: list[pa.Array | pa.Scalar] = []
        for token in tokens:
            if token.startswith("'"):
                pieces.append(pa.scalar(token[1:-1] or "'"))
            elif not token[0].isalpha():
                pieces.append(pa.scalar(token))
            elif token[0] == "S":
                pieces.append(pc.utf8_rpad(pc.utf8_slice_codeunits(fraction, 0, len(token)),
                                           len(token), "0"))
            elif _zone(token) is not None:
                pieces.append(pa.scalar(_offset(token)))
            else:
                pieces.append(_padded(*fields[token]))
        text = pc.binary_join_element_wise(pa.array(np.full(len(times), "", dtype=object),
                                                    pa.string()), *pieces, "")
        return pc.if_else(pa.array(known), text, pa.scalar(None, pa.string()))

    return write


def _offset(token: str) -> str:
    """A zero zone offset as `token` writes it (Java: `X` and `ZZZZZ` write `Z`)."""
    letter, count = token[0], len(token)
    if letter == "X" or (letter == "Z" and count == 5):
        return _UTC["X"]
    return _UTC["x"][count - 1] if letter == "x" else _UTC["Z"]


def _padded(values: np.ndarray, width: int) -> pa.Array:
    """Whole numbers as text of at least `width` digits, zero-padded."""
    return pc.utf8_lpad(pc.cast(pa.array(values, pa.int64()), pa.string()), width, "0")


def _civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of days since 1970-01-01, proleptic Gregorian (H. Hinnant's
    algorithm, the inverse of `time_format._days_from_civil`)."""
    z = days + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2), month, day
