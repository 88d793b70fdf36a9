"""Times written back as the input wrote them: numbers in `time_unit` since the epoch as text in
the source's `time_format`, the inverse of `time_format.zoned_time_parser` (for the matches'
time columns, docs/engine.md "Matches as Parquet"). A pattern with a zone offset writes each
time in the offset its event was written with (as Java's formatter spells that offset for the
letter), UTC's where none is known. Imports only pyarrow, NumPy and the standard library
(shipped in the Spark job's zip).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepplan.sources.time_format import (
    FORMAT_TOKEN,
    TimeFormatError,
    time_format_regex,
    zone_pattern,
)
from cepplan.workload.durations import SECONDS_PER_UNIT


def time_formatter(pattern: str, time_unit: str
                   ) -> Callable[[np.ndarray, np.ndarray | None], pa.Array]:
    """The function writing times in `time_unit` with `pattern` (NaN: null), each in its
    zone offset (seconds east of UTC; None: UTC). Reads the letters `time_parser` reads (else
    `TimeFormatError`): `yyyy` four digits, `yy` the year's last two, fractions `S..` their
    first n digits (to the microsecond), each time rounded to the finest field the pattern
    shows."""
    time_format_regex(pattern)  # the parser's letters, or TimeFormatError
    tokens = [m.group(0) for m in FORMAT_TOKEN.finditer(pattern)]
    shown = min(6, max((len(t) for t in tokens if t[0] == "S"), default=0))
    per_tick = 1e6 * SECONDS_PER_UNIT[time_unit] / 10 ** (6 - shown)

    def write(times: np.ndarray, offsets: np.ndarray | None = None) -> pa.Array:
        """Each distinct (time, offset) written once (times repeat: a match's events,
        Kleene lists)."""
        times = np.asarray(times, dtype=np.float64).reshape(-1)
        if offsets is None or not len(times):
            offsets = np.zeros(len(times), dtype=np.int64)
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        pairs = np.stack([times, offsets.astype(np.float64)], axis=1)
        distinct, where = np.unique(pairs, axis=0, return_inverse=True)
        return written(distinct[:, 0], distinct[:, 1].astype(np.int64)).take(
            pa.array(where.reshape(-1), pa.int64()))

    def written(times: np.ndarray, offsets: np.ndarray) -> pa.Array:
        known = np.isfinite(times)
        ticks = np.round(np.where(known, times, 0.0).astype(np.longdouble)
                         * np.longdouble(per_tick)).astype(np.int64)
        ticks += np.where(known, offsets, 0) * 10 ** shown  # the clock the input showed
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
            elif zone_pattern(token) is not None:
                pieces.append(_offset_texts(token, offsets))
            else:
                pieces.append(_padded(*fields[token]))
        text = pc.binary_join_element_wise(pa.array(np.full(len(times), "", dtype=object),
                                                    pa.string()), *pieces, "")
        return pc.if_else(pa.array(known), text, pa.scalar(None, pa.string()))

    return write


def _offset_texts(token: str, offsets: np.ndarray) -> pa.Array:
    """Each offset as the zone `token` writes it, each distinct offset spelled once."""
    distinct, where = np.unique(offsets, return_inverse=True)
    spelled = pa.array([offset_text(token, int(o)) for o in distinct], pa.string())
    return spelled.take(pa.array(where.reshape(-1), pa.int64()))


def time_writer(pattern: str | None, time_unit: str) -> Callable[[float], str]:
    """One time as the user reads it in a message: with the source's `time_format` (letters
    the in-process reader reads) its text (a zone offset as UTC's: which one the event was
    written with is not known here), else `ts` and the number to 15 digits (`:g`'s six cut
    an epoch time to the hour)."""
    try:
        write = time_formatter(pattern, time_unit) if pattern else None
    except TimeFormatError:
        write = None
    if write is None:
        return "ts {:.15g}".format
    return lambda time: str(write(np.array([time]))[0])


def offset_text(token: str, seconds: int) -> str:
    """A zone offset of `seconds` east of UTC as Java's formatter writes it for the pattern
    letters `token`: `X` (and `ZZZZZ`) write `Z` for zero; one `X`/`x` writes `+HH`, or
    `+HHMM` when the minutes are not zero; two and four letters `+HHMM`, three and five
    `+HH:MM`, four and five adding the seconds when not zero; `Z` to `ZZZ` `+HHMM`."""
    letter, count = token[0], len(token)
    if letter == "Z" and count == 5:
        letter = "X"
    if seconds == 0 and letter == "X":
        return "Z"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    sign = "-" if seconds < 0 else "+"
    if letter == "Z":
        return f"{sign}{hours:02d}{minutes:02d}"
    colon = ":" if count in (3, 5) else ""
    text = f"{sign}{hours:02d}"
    if count > 1 or minutes or secs:
        text += f"{colon}{minutes:02d}"
    if count in (4, 5) and secs:
        text += f"{colon}{secs:02d}"
    return text


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
