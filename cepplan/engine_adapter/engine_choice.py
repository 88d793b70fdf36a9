"""Which engine `cepplan run --engine auto` picks (docs/engine.md, "Choosing the engine")."""

from __future__ import annotations

import os
from collections.abc import Sequence

ENGINES = ("auto", "local", "spark")
LOCAL_MAX_BYTES = 2 << 30  # inputs above 2 GiB in all go to Spark under --engine auto


def choose_engine(engine: str, master: str | None, events: Sequence[str]) -> str:
    """`local` or `spark`: as asked, else Spark when a master is given or the input files
    together exceed `LOCAL_MAX_BYTES`, else local."""
    if engine != "auto":
        return engine
    if master is not None:
        return "spark"
    size = sum(os.path.getsize(p) for p in events if os.path.isfile(p))
    return "spark" if size > LOCAL_MAX_BYTES else "local"
