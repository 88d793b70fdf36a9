"""Which engine `--engine auto` picks for `cepplan run` and `cepplan stats` (docs/engine.md,
"Choosing the engine"; docs/stats.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from cepplan.errors import InputError
from cepplan.workload.input_files import InputFileError, files_in

ENGINES = ("auto", "local", "spark")
LOCAL_MAX_BYTES = 2 << 30  # inputs above 2 GiB in all go to Spark under --engine auto


def choose_engine(engine: str, master: str | None, events: Sequence[str]) -> str:
    """`local` or `spark`: as asked, else Spark when a master or a URL (hdfs://...) is given
    or the files the inputs name (directories and globs expanded) together exceed
    `LOCAL_MAX_BYTES`, else local."""
    if engine != "auto":
        return engine
    if master is not None or any("://" in path for path in events):
        return "spark"
    try:
        size = sum(os.path.getsize(path) for path in files_in(list(events)))
    except InputFileError as err:
        raise InputError.single(err.path, "", err.message) from None
    return "spark" if size > LOCAL_MAX_BYTES else "local"
