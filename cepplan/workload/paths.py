"""JSON paths for error messages: `patterns[2].where[1]`."""

from __future__ import annotations

from collections.abc import Iterable


def json_path(parts: Iterable[str | int]) -> str:
    """Render path parts as `a.b[3].c`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}" if part.isidentifier() else f"[{part!r}]"
        else:
            out = part if part.isidentifier() else f"[{part!r}]"
    return out
