"""The free space of the disk a run writes its matches to (JSON lines): a Kleene expansion
whose matches cannot fit there, even at the fewest bytes an event takes in a written match, is
refused before it is enumerated, with one error naming the pattern, its window and the figures;
enumerating it would fill the disk for hours before failing (docs/engine.md, "Memory budget")."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from cepplan.engine_adapter.runtime.memory import size_text, window_text
from cepplan.errors import CepplanError

# the fewest bytes one event takes in a written match: `{"id": 0, "type": "T", "ts": 0}, `
EVENT_BYTES = 32

_watched: list[Path] = []


class OutputSpaceError(CepplanError):
    """A partition's matches cannot fit on the output's disk."""


@contextmanager
def watching(directory: Path) -> Iterator[None]:
    """Within the block, this process's Kleene expansions are checked against the free space
    of the file system `directory` lies on."""
    _watched.append(directory)
    try:
        yield
    finally:
        _watched.remove(directory)


def watched_output(directory: Path, output_format: str) -> AbstractContextManager:
    """`watching` where JSON lines go; not for Parquet, whose compression leaves no least
    bytes per match."""
    return nullcontext() if output_format == "parquet" else watching(directory)


def check(pattern: str, window: float | None, unit: str, matches: int, events: int,
          what: str) -> None:
    """OutputSpaceError when `matches` about to be written, of `events` events in all, take
    more than the free space where the output is watched (no check when none is)."""
    if not _watched:
        return
    try:
        found = os.statvfs(_watched[-1])
    except OSError:
        return
    free = found.f_bavail * found.f_frsize
    need = events * EVENT_BYTES
    if need > free:
        raise OutputSpaceError(
            f"pattern {pattern}: one partition {window_text(window, unit)} would write about "
            f"{matches:,} {what}, at least {size_text(need)}, more than the {size_text(free)} "
            "free on the output's disk: narrow the window, add conditions, lower "
            "options.kleene_cap, or write to a larger disk")
