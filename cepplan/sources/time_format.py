"""Spark datetime patterns (`source.time_format`) read in-process, as Spark's strict parser
reads them (`F.try_to_timestamp` in a UTC session): the letters `yyyy yy MM dd HH mm ss S`,
zone offsets `X..XXXXX`, `x..xxxxx`, `Z..ZZZ`, `ZZZZZ` (`Z`, `+01`, `+0100`, `+01:00`,
`+01:00:15`), quoted or punctuation literals (letters compared without case, as Spark does).
Values are parsed with one regular expression (Arrow's RE2), or straight from the string buffer
with NumPy when they fit the pattern's fixed-width layout, once per run of equal stamps.

Imports only pyarrow, NumPy and the standard library (shipped in the Spark job's zip with the
reader).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepplan.workload.durations import SECONDS_PER_UNIT


class TimeFormatError(ValueError):
    """A `time_format` with letters this reader does not read."""


_TIME_LETTERS = {"yyyy": ("year", "4,10"), "yy": ("year2", "2"), "MM": ("month", "2"),
                 "dd": ("day", "2"), "HH": ("hour", "2"), "mm": ("minute", "2"),
                 "ss": ("second", "2")}
FORMAT_TOKEN = re.compile(r"'[^']*'|([A-Za-z])\1*|[^A-Za-z']+")
_NEVER = r"\b\B"  # matches nothing
_OFFSETS = [r"[+-]\d{2}(?:\d{2})?", r"[+-]\d{4}", r"[+-]\d{2}:\d{2}", r"[+-]\d{4}(?:\d{2})?",
            r"[+-]\d{2}:\d{2}(?::\d{2})?"]  # X or x repeated 1 to 5 times, as Java parses them
_LETTERS = "yyyy yy MM dd HH mm ss S, zone offsets X x Z"


def zone_pattern(token: str) -> str | None:
    """The regular expression of a zone offset token (None: not one this reader reads): `X`
    accepts `Z` for UTC (any case, as Spark), `x` not; `Z` to `ZZZ` is `+HHMM`, `ZZZZZ`
    is `XXXXX`."""
    letter, count = token[0], len(token)
    if letter == "Z" and count <= 3:
        return r"[+-]\d{4}"
    if letter == "Z" and count == 5:
        letter = "X"
    if letter not in "Xx" or count > 5:
        return None
    return ("[Zz]|" if letter == "X" else "") + _OFFSETS[count - 1]


def time_format_regex(pattern: str) -> str:
    """A Spark datetime pattern as a regular expression with one named group per field, read
    as Spark's parser reads it: fixed two-digit fields, `yyyy` taking 4 to 10 digits less those
    of the numeric fields right after it (so a digit literal after such a run never parses;
    years above 9999 are refused when the fields are checked), fractions `S..` 1 to n digits,
    one zone offset; literals compared without letter case. Other letters raise
    `TimeFormatError`."""
    out: list[str] = []
    open_year = False  # inside a numeric run that began with the variable-width year
    for match in FORMAT_TOKEN.finditer(pattern):
        token = match.group(0)
        literal = token[1:-1] or "'" if token.startswith("'") else (
            token if not token[0].isalpha() else None)
        if literal is not None:
            if open_year and literal[:1].isdigit():
                return _NEVER
            open_year = False
            out.append(f"(?i:{re.escape(literal)})" if re.search("[A-Za-z]", literal)
                       else re.escape(literal))
        elif zone_pattern(token) is not None:
            if "(?P<zone>" in "".join(out):
                raise TimeFormatError(f"time_format {pattern!r}: one zone offset at most")
            open_year = False
            out.append(f"(?P<zone>{zone_pattern(token)})")
        elif token[0] == "S":
            out.append(f"(?P<fraction>\\d{{1,{len(token)}}})")
        elif token in _TIME_LETTERS:
            name, width = _TIME_LETTERS[token]
            open_year = open_year or name == "year"
            out.append(f"(?P<{name}>\\d{{{width}}})")
        else:
            raise TimeFormatError(f"time_format {pattern!r}: the local engine reads the "
                                  f"letters {_LETTERS} and quoted text; for {token!r} use "
                                  "--engine spark")
    return "^" + "".join(out) + "$"


def time_parser(pattern: str, time_unit: str) -> Callable[[pa.Array], np.ndarray]:
    """The function reading a string array with `pattern`: times in `time_unit` since the
    epoch, NaN where a value does not parse (`TimeFormatError` for a pattern it cannot read)."""
    parse = zoned_time_parser(pattern, time_unit)
    return lambda array: parse(array)[0]


def has_zone(pattern: str) -> bool:
    """Whether `pattern` reads a zone offset (one of the letters `time_format_regex` reads)."""
    return any(not token.startswith("'") and token[0].isalpha() and zone_pattern(token) is not None
               for token in (m.group(0) for m in FORMAT_TOKEN.finditer(pattern)))


def zoned_time_parser(pattern: str, time_unit: str
                      ) -> Callable[[pa.Array], tuple[np.ndarray, np.ndarray]]:
    """`time_parser`, also giving each value's zone offset in seconds east of UTC as the
    input wrote it (int32; 0 without a zone letter or where the value does not parse), so
    that times can be written back in the input's own offset (`time_text`)."""
    regex = time_format_regex(pattern)
    layout = _fixed_layout(pattern)
    per_unit = SECONDS_PER_UNIT[time_unit]

    def parse(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Micros since the epoch (UTC) / (1e6 * unit), NaN where it does not parse or names
        no real date (Spark's strict resolver); the offsets."""
        text = array
        if regex == _NEVER:
            return np.full(len(text), np.nan), np.zeros(len(text), dtype=np.int32)
        firsts = _run_starts(text)
        if firsts is not None and len(firsts) <= len(text) // 2:  # a coarse clock: each once
            repeats = np.diff(np.append(firsts, len(text)))
            times, offsets = parse(text.take(firsts))
            return np.repeat(times, repeats), np.repeat(offsets, repeats)
        fields, valid = _fixed_fields(text, layout) if layout else ({}, None)
        if valid is None or not valid.all():  # the rows of other shapes: the regex
            rest = None if valid is None else np.flatnonzero(~valid)
            found, matched = _regex_fields(text if rest is None else text.take(rest), regex)
            if rest is None:
                fields, valid = found, matched
            else:
                for name, column in found.items():
                    fields.setdefault(name, np.zeros(len(text), dtype=np.int64))[rest] = column
                valid[rest] = matched
        n = len(text)

        def part(name: str, default: int) -> np.ndarray:
            return fields[name] if name in fields else np.full(n, default, dtype=np.int64)

        year = part("year", 1970) if "year2" not in fields else 2000 + part("year2", 0)
        month, day = part("month", 1), part("day", 1)
        hour, minute, second = part("hour", 0), part("minute", 0), part("second", 0)
        offset = part("offset", 0)
        micros = part("micros", 0) - offset * 1_000_000
        valid &= (year <= 9999) & (month >= 1) & (month <= 12)
        valid &= (hour <= 23) & (minute <= 59) & (second <= 59)
        valid &= (day >= 1) & (day <= _days_in_month(year, np.clip(month, 1, 12)))
        days = _days_from_civil(year, np.clip(month, 1, 12), np.clip(day, 1, 31))
        total = ((days * 86400 + hour * 3600 + minute * 60 + second) * 1_000_000 + micros)
        return (np.where(valid, total / (1e6 * per_unit), np.nan),
                np.where(valid, offset, 0).astype(np.int32))

    return parse


def parse_times(texts: Sequence[str], pattern: str, time_unit: str) -> np.ndarray:
    """`texts` read with the Spark datetime `pattern`, in `time_unit` (NaN: no time)."""
    return time_parser(pattern, time_unit)(pa.array(list(texts), pa.string()))


def _run_starts(text: pa.Array) -> np.ndarray | None:
    """Where each run of equal consecutive values starts, when all values have one length
    (compared as bytes); None otherwise."""
    n = len(text)
    if n < 2 or text.null_count or not text.buffers()[2]:
        return None
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset:text.offset + n + 1]
    width = int(offsets[1] - offsets[0])
    if width == 0 or offsets[-1] - offsets[0] != n * width or (np.diff(offsets) != width).any():
        return None
    data = np.frombuffer(text.buffers()[2], dtype=np.uint8)
    rows = data[offsets[0]:offsets[-1]].view(np.dtype((np.void, width)))
    return np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]]))


def _regex_fields(text: pa.Array, regex: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The fields of `time_format_regex` per value (0 where it does not match), and which
    values match; a fraction as microseconds."""
    found = pc.extract_regex(text, regex)
    valid = ~pc.is_null(found).to_numpy(zero_copy_only=False)
    fields = {}
    for index in range(found.type.num_fields):
        name = found.type.field(index).name
        if name == "zone":
            fields["offset"], in_range = _offset_seconds(pc.struct_field(found, name))
            valid &= in_range
            continue
        digits = pc.fill_null(pc.struct_field(found, name), "0")
        value = pc.cast(digits, pa.int64()).to_numpy(zero_copy_only=False)
        if name == "fraction":
            width = pc.utf8_length(digits).to_numpy(zero_copy_only=False).astype(np.int64)
            name, value = "micros", np.where(width <= 6, value * 10 ** np.clip(6 - width, 0, 6),
                                             value // 10 ** np.clip(width - 6, 0, 3))
        fields[name] = value
    return fields, valid


def _offset_seconds(zones: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Seconds east of UTC of zone offsets as the regex took them (`Z`, `+HH`, `+HHMM`,
    `+HH:MM`, `+HHMMSS`, `+HH:MM:SS`; NULL: UTC), and which are real offsets: minutes and
    seconds below 60, at most 18 hours either way (Java's `ZoneOffset`)."""
    zones = pc.fill_null(zones, "Z")
    digits = pc.utf8_rpad(pc.replace_substring(pc.utf8_slice_codeunits(zones, 1), ":", ""),
                          6, "0")

    def field(start: int) -> np.ndarray:
        piece = pc.utf8_slice_codeunits(digits, start, start + 2)
        return pc.cast(piece, pa.int64()).to_numpy(zero_copy_only=False)

    hours, minutes, seconds = field(0), field(2), field(4)
    size = hours * 3600 + minutes * 60 + seconds
    west = pc.starts_with(zones, "-").to_numpy(zero_copy_only=False)
    real = (minutes < 60) & (seconds < 60) & (size <= 18 * 3600)
    return np.where(west, -size, size), real


_FIXED_WIDTHS = {"yyyy": 4, "yy": 2, "MM": 2, "dd": 2, "HH": 2, "mm": 2, "ss": 2}


def _fixed_layout(pattern: str) -> list[tuple[str, str | bytes]] | None:
    """The pattern as fixed-width pieces, ("field", name) of its digits or ("text", bytes),
    when a value of that exact length can only parse one way: no fraction (its width varies)
    and ASCII literals; else None."""
    layout: list[tuple[str, str | bytes]] = []
    for match in FORMAT_TOKEN.finditer(pattern):
        token = match.group(0)
        literal = token[1:-1] or "'" if token.startswith("'") else (
            token if not token[0].isalpha() else None)
        if literal is not None:
            if not literal.isascii():
                return None
            layout.append(("text", literal.encode()))
        elif token in _FIXED_WIDTHS:
            layout.append(("field", token))
        else:
            return None
    return layout


def _fixed_fields(text: pa.Array, layout: list[tuple[str, str | bytes]]
                  ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The fields of the values whose bytes fit `layout` exactly (digits where fields are,
    the literals elsewhere), read from the string buffer with NumPy; which values fit. A
    value fits exactly when the regex matches it with the year taking 4 digits, the only
    way it can at that length."""
    n = len(text)
    width = sum(len(piece) if kind == "text" else _FIXED_WIDTHS[piece]
                for kind, piece in layout)
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset:text.offset + n + 1]
    fits = (np.diff(offsets) == width) & ~pc.is_null(text).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(fits)
    data = np.frombuffer(text.buffers()[2], dtype=np.uint8) if text.buffers()[2] else None
    if not len(rows) or data is None:
        return {}, fits
    start = int(offsets[0])
    if len(rows) == n and offsets[-1] - start == n * width:  # all of one width: a view
        chars = data[start:start + n * width].reshape(n, width)
    else:
        chars = data[offsets[rows][:, None] + np.arange(width)]
    digits = chars - np.uint8(48)  # a digit's value; anything else wraps above 9
    is_digit = np.concatenate([np.full(len(piece), kind == "field") if kind == "text" else
                               np.ones(_FIXED_WIDTHS[piece], dtype=bool)
                               for kind, piece in layout]).astype(bool)
    literals = np.frombuffer(b"".join(piece if kind == "text" else b"0" * _FIXED_WIDTHS[piece]
                                      for kind, piece in layout), dtype=np.uint8)
    good = np.where(is_digit, digits <= 9, chars == literals).all(axis=1)
    fields, at = {}, 0
    for kind, piece in layout:
        if kind == "text":
            at += len(piece)
            continue
        value = np.zeros(len(rows), dtype=np.int64)
        for column in range(at, at + _FIXED_WIDTHS[piece]):
            value = value * 10 + digits[:, column]
        fields[_TIME_LETTERS[piece][0]] = np.zeros(n, dtype=np.int64)
        fields[_TIME_LETTERS[piece][0]][rows] = value
        at += _FIXED_WIDTHS[piece]
    fits[rows[~good]] = False
    return fields, fits


def _days_in_month(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    lengths = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[month - 1]
    return lengths + ((month == 2) & leap)


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y = year - (month <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


