"""What a command says about the rows its reader rejected: a warning naming the reasons (on
stderr, even with `--quiet`), an error when every row was rejected, and in both what to fix
when the reasons tell it — times that are dates without `source.time_format` most of all
(`run -q` exited 0 with 0 matches while every row was rejected).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cepplan.errors import InputError
from cepplan.sources.local_source import REJECT_TIME, REJECT_TYPE_UNKNOWN, first_unparsed_time
from cepplan.sources.time_format import TimeFormatError, parse_times
from cepplan.workload.model import Workload

# a date, then optionally a time of day, a fraction and a zone, as logs and clickstreams write
_DATE_TIME = re.compile(r"^\d{4}([-/.])\d{2}\1\d{2}(?:([T ])\d{2}:\d{2}"
                        r"(:\d{2}(?:([.,])(\d{1,9}))?)?)?(Z|[+-]\d{2}(:?)\d{2}|[+-]\d{2})?$")


def check_rejected(where: str, read: int, reasons: Mapping[str, int], paths: Sequence[str],
                   workload: Workload) -> str | None:
    """`InputError` when no row of `paths` is usable (every one rejected or of a type the
    workload does not declare); otherwise the warning line for the rejected rows, or None when
    there are none. Rows of undeclared types are only not used: the workload does not need
    them, so they are never warned of."""
    rejected = {k: v for k, v in reasons.items() if v and k != REJECT_TYPE_UNKNOWN}
    unused = reasons.get(REJECT_TYPE_UNKNOWN, 0)
    if read and sum(rejected.values()) + unused >= read:
        every = {**rejected, **({"of types the workload does not declare": unused}
                               if unused else {})}
        raise InputError.single(where, "", f"no usable rows: all {read:,} rows rejected "
                                f"({_listed(every)}){rejection_advice(reasons, paths, workload)}")
    if not rejected:
        return None
    return (f"warning: {where}: {sum(rejected.values()):,} of {read:,} rows rejected "
            f"({_listed(rejected)}){rejection_advice(reasons, paths, workload)}")


def _listed(counts: Mapping[str, int]) -> str:
    """`reason: count, ...`, the most frequent first."""
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def rejection_advice(reasons: Mapping[str, int], paths: Sequence[str],
                     workload: Workload) -> str:
    """What to fix, as text to append to the rejection's message ("" when the reasons do not
    say): for unparsable times, the first such value and the `time_format` it needs."""
    if not reasons.get(REJECT_TIME) or workload.source is None:
        return ""
    example = _first_unparsed_time(paths, workload)
    if example is None:
        return ""
    pattern = workload.source.time_format
    if pattern is not None:
        return f": a time such as {example!r} does not fit source.time_format {pattern!r}"
    guess = suggested_time_format(example, workload.time_unit)
    return (f": times such as {example!r} are not numbers: set source.time_format in "
            "the workload to their pattern" + (f", here {guess!r}" if guess else ""))


def suggested_time_format(text: str, time_unit: str) -> str | None:
    """The Spark datetime pattern of an ISO-like date and time (`2024-01-31T10:00:05.250Z`,
    `2024/01/31 10:00`), if the in-process reader parses `text` with it; else None."""
    found = _DATE_TIME.match(text.strip())
    if found is None:
        return None
    sep, middle, seconds, point, fraction, zone, colon = found.groups()
    pattern = f"yyyy{sep}MM{sep}dd"
    if middle is not None:
        pattern += ("'T'" if middle == "T" else " ") + "HH:mm"
        if seconds is not None:
            pattern += ":ss" + (f"{point}{'S' * len(fraction)}" if fraction else "")
    if zone is not None:
        pattern += "XXX" if colon or zone == "Z" else "XX" if len(zone) == 5 else "X"
    try:
        parsed = parse_times([text.strip()], pattern, time_unit)
    except TimeFormatError:
        return None
    return pattern if parsed[0] == parsed[0] else None  # NaN: it does not parse


def _first_unparsed_time(paths: Sequence[str], workload: Workload) -> str | None:
    """The first time value of the input that is read as no time, as text (None when the
    input is not local or cannot be peeked at)."""
    if any("://" in p for p in paths):
        return None
    from cepplan.workload.source_spec import reader_arguments

    return first_unparsed_time(paths, **reader_arguments(workload))
