"""Reading and writing cepplan's JSON files: orjson, atomic writes, clear errors.

A write goes to a temporary file in the target's directory and is renamed over the target, so a
failed run never leaves a half-written plan or statistics file (DESIGN.md, Data flow); a set
of files written together is renamed only once all of them are written.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cepplan.errors import InputError, OutputError


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
    """Write `data` to `path` all or nothing: a temporary file beside it, renamed over it (at
    the end of `written_together`, inside one). A symbolic link is written through (the link
    stays a link), a FIFO or a character device such as /dev/null written directly, never
    replaced; any failure is an `OutputError` naming `path` and leaves no temporary file."""
    path = Path(path)
    target = Path(os.path.realpath(path))
    try:
        if stream_target(target, path):
            with open(target, "wb") as handle:
                handle.write(data)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = _temporary_copy(target, data)
    except OSError as exc:
        raise OutputError.from_os(path, exc) from None
    pending = _pending.get()
    if pending is None:
        _rename_into_place([(temporary, target, path)])
    else:
        pending.append((temporary, target, path))


def stream_target(target: Path, shown: str | Path) -> bool:
    """Whether `target` is a FIFO or a character device (written through); a block device or
    a socket is refused (`shown`: the path as the user gave it)."""
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return False
    for kind, test in (("a block device", stat.S_ISBLK), ("a socket", stat.S_ISSOCK)):
        if test(mode):
            raise OutputError(shown, f"it is {kind}; name a regular file, a FIFO or a "
                              "character device such as /dev/null")
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _temporary_copy(target: Path, data: bytes) -> Path:
    """`data` in a new hidden file beside `target`, on disk (a short prefix of its name, so a
    255-byte name still leaves room for the temporary one's)."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name[:48]}.", suffix=".tmp",
                                dir=target.parent)
    try:
        os.chmod(name, 0o666 & ~_umask())  # mkstemp makes 0600; give what open() would
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


_pending: contextvars.ContextVar[list[tuple[Path, Path, Path]] | None] = (
    contextvars.ContextVar("cepplan_pending_writes", default=None))


@contextlib.contextmanager
def written_together() -> Iterator[None]:
    """Within the block, `write_bytes_atomic` only writes temporary files; they are renamed
    into place together when the block ends normally and removed when it does not, so a set
    of files (a report's .html, .md and .json) is replaced whole or not at all."""
    pending: list[tuple[Path, Path, Path]] = []
    token = _pending.set(pending)
    try:
        yield
    except BaseException:
        for temporary, _, _ in pending:
            temporary.unlink(missing_ok=True)
        raise
    finally:
        _pending.reset(token)
    _rename_into_place(pending)


def _rename_into_place(pending: list[tuple[Path, Path, Path]]) -> None:
    """Rename each temporary file over its target, SIGINT and SIGTERM held off meanwhile (the
    main thread; elsewhere they are not delivered anyway); a failure removes those left."""
    main = threading.current_thread() is threading.main_thread()
    held = {signal.SIGINT, signal.SIGTERM}
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        for index, (temporary, target, shown) in enumerate(pending):
            try:
                os.replace(temporary, target)
            except OSError as exc:
                for left, _, _ in pending[index:]:
                    left.unlink(missing_ok=True)
                raise OutputError.from_os(shown, exc) from None
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Serialise `obj` with orjson (indented, keys in insertion order) and write it atomically."""
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    write_bytes_atomic(path, data + b"\n")
