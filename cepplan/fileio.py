"""Reading and writing cepplan's JSON files: orjson, atomic writes, clear errors.

A write goes to a temporary file in the target's directory and is renamed over the target, so a
failed run never leaves a half-written plan or statistics file (DESIGN.md, Data flow).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from cepplan.errors import InputError


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; a missing file or a syntax error becomes an `InputError`."""
    return parse_json(read_input(path), path)


def read_input(path: str | Path) -> bytes:
    """A file's bytes; a missing or unreadable file becomes an `InputError`."""
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError.single(str(path), "", "file not found") from None
    except IsADirectoryError:
        raise InputError.single(str(path), "", "is a directory, not a file") from None
    except OSError as exc:
        raise InputError.single(str(path), "", f"cannot read: {exc.strerror}") from None


def parse_json(data: bytes, path: str | Path) -> Any:
    """Parse JSON bytes read from `path`; a syntax error becomes an `InputError` there."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        line, col = _line_col(data, exc.pos)
        raise InputError.single(
            str(path), "", f"not valid JSON at line {line}, column {col}: {exc.msg}"
        ) from None


def _line_col(data: bytes, pos: int) -> tuple[int, int]:
    before = data[:pos]
    line = before.count(b"\n") + 1
    col = pos - (before.rfind(b"\n") + 1) + 1
    return line, col


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` via a temporary file and a rename (all or nothing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give what open() would
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Serialise `obj` with orjson (indented, keys in insertion order) and write it atomically."""
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    write_bytes_atomic(path, data + b"\n")
