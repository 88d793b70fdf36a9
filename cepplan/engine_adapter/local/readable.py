"""Whether the in-process reader can read an input by byte range (the Spark job's range-local
tasks and the in-process engine's workers both ask): one plain local CSV file, a time format it
translates, and its own modules importable where the job runs."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any


def plain_csv(data: Mapping[str, Any], events: Sequence[str]) -> bool:
    """Whether the in-process reader can read `events` by byte range: CSV, local plain files
    (not compressed), a `time_format` it translates, its modules importable (orjson among
    them), and a plan without contexts or consumer queries (which read the input whole)."""
    from cepplan.workload.input_files import compression

    source = data["reader"]["source"]
    if source["format"] != "csv" or data.get("contexts") or data.get("covering"):
        return False
    if not all("://" not in p and not p.startswith("file:") and os.path.isfile(p)
               and compression(p) is None for p in events):
        return False
    try:
        from cepplan.engine_adapter.local.source import read_batches  # noqa: F401
        from cepplan.sources.time_format import TimeFormatError, time_format_regex
    except ImportError as err:
        not_installed(err)
        return False
    if source.get("time_format"):
        try:
            time_format_regex(source["time_format"])
        except TimeFormatError:  # a pattern letter it does not read
            return False
    return True


def not_installed(err: ImportError) -> None:
    """Re-raise `err` unless a library is missing on this Python (orjson: the job then takes
    Spark's reader or the shuffle plan): a cepplan module missing from runtime.zip is the
    job's own fault and must not turn, unseen, into a slower plan."""
    if (err.name or "").split(".")[0] == "cepplan":
        raise err
