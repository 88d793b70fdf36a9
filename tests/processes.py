"""The processes a test's process started, read from /proc (Linux): the parent links."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> set[int]:
    """The live processes whose parent is `pid`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found
