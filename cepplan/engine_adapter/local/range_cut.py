"""How many byte ranges one CSV file is cut into for the in-process engine's workers (both
the ranges' reader and the workers spawned ahead of it ask)."""

from __future__ import annotations

import os

MIN_RANGE_BYTES = 2 << 20  # input per process: a worker costs ~0.35 s of CPU to start


def range_count(path: str, workers: int) -> int:
    """The byte ranges the file at `path` is cut into for `workers` processes."""
    return max(1, min(workers, os.path.getsize(path) // MIN_RANGE_BYTES))
