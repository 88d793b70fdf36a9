"""What both readers (in-process and Spark) decide alike about event files before reading
them: which files a path names, how a file is compressed, whether its first bytes contradict
the workload's `source.format`, and which column names the input may have.

Standalone (standard library only) so the generated Spark job ships it with
`spark_source.py`. Functions return a problem sentence (or raise `InputFileError`); each
reader turns it into its own error naming the file.
"""

from __future__ import annotations

import csv
import glob
import io
import os
from collections.abc import Sequence

# The compressions both engines read, by file name ending (Spark: Hadoop's codecs).
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
_MAGIC = [(b"PAR1", "Parquet"), (b"\x1f\x8b", "gzip"), (b"BZh", "bz2"),
          (b"\x28\xb5\x2f\xfd", "zstd"), (b"\xfd7zXZ\x00", "xz"), (b"PK\x03\x04", "zip"),
          (b"\x04\x22\x4d\x18", "lz4"), (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")]
_ENDINGS = {codec: ending for ending, codec in COMPRESSIONS.items()}
BOM = "\ufeff"  # a UTF-8 byte order mark as text (Excel starts its CSV files with one)

# A CSV line (without its line break) whose quote is still open at its end, as both readers
# lex it: a quote opens a field only at the field's start, a backslash escapes the next
# character. Spark reads such a line alone; a reader over many lines would run the field on.
_ESCAPED = r"\\[\s\S]"
_FIELD = (rf'(?:"(?:[^"\\]|{_ESCAPED})*"(?:[^,\\]|{_ESCAPED})*'
          rf'|(?:[^",\\]|{_ESCAPED})(?:[^,\\]|{_ESCAPED})*)?')
UNCLOSED_QUOTE_LINE = rf'^(?:{_FIELD},)*"(?:[^"\\]|{_ESCAPED})*\\?$'
ESCAPED_LINE_BREAK = rf'^(?:{_FIELD},)*{_FIELD}\\$'  # a backslash escaping the line break


class InputFileError(ValueError):
    """A path that names no file (`path`: the path as given)."""

    def __init__(self, message: str, path: str):
        super().__init__(f"{path}: {message}")
        self.message = message
        self.path = path


def is_glob(path: str) -> bool:
    """Whether `path` is a pattern (`*`, `?`, `[`) that names the files it matches."""
    return any(c in path for c in "*?[")


def files_in(paths: str | Sequence[str]) -> list[str]:
    """Files to read: files as given, directories as their non-hidden files (sorted; names
    starting with `.` or `_` skipped, as Spark does; one without any is an error), globs
    expanded."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    if not paths:
        raise InputFileError("no input files given", "")
    files: list[str] = []
    for path in paths:
        matches = sorted(glob.glob(path)) if is_glob(path) else [path]
        if not matches or not all(os.path.exists(m) for m in matches):
            raise InputFileError("no such file or directory", path)
        for match in matches:
            if os.path.isdir(match):
                found = [os.path.join(root, name)
                         for root, dirs, names in sorted(os.walk(match))
                         for name in sorted(names) if not name.startswith((".", "_"))
                         if not any(d.startswith((".", "_")) for d in
                                    os.path.relpath(root, match).split(os.sep) if d != ".")]
                if not found:
                    raise InputFileError("no event files in this directory (names starting "
                                         "with . or _ are skipped)", match)
                files += found
            else:
                files.append(match)
    return files


def compression(path: str) -> str | None:
    """The codec a file's name says it is compressed with (`COMPRESSIONS`), or None."""
    return COMPRESSIONS.get(os.path.splitext(path)[1].lower())


def content_problem(path: str, fmt: str) -> str | None:
    """Why the file at `path` cannot be read as `fmt` text (csv, jsonl) from its first bytes:
    a Parquet file, a compression its name does not announce (or the other way round), a
    compression neither engine reads, UTF-16 text; None when nothing is wrong."""
    if fmt == "parquet":
        return None
    with open(path, "rb") as handle:
        head = handle.read(8)
    kind = next((name for magic, name in _MAGIC if head.startswith(magic)), None)
    named = compression(path)
    if kind == named:
        return None
    endings = ", ".join(COMPRESSIONS)
    if kind == "Parquet":
        return f"is a Parquet file, but the workload's source.format is {fmt!r}"
    if kind == "UTF-16":
        return "is UTF-16 text (it starts with a UTF-16 byte order mark): save it as UTF-8"
    if named is not None:
        return (f"its name ends {_ENDINGS[named]}, but it is not {named}-compressed "
                + (f"(it is {kind}-compressed)" if kind else "(its first bytes say otherwise)"))
    if kind in _ENDINGS:
        return (f"is {kind}-compressed, but its name does not end {_ENDINGS[kind]}: rename it "
                "(the name says how to decompress a file, as for Spark)")
    if kind is not None:
        return f"is {kind}-compressed: decompress it (cepplan reads files ending {endings})"
    return None


def header_names(line: str) -> list[str]:
    """The column names of a CSV header line, read as both engines read fields (backslash
    escapes a quote), without a leading byte order mark."""
    return next(csv.reader(io.StringIO(line.removeprefix(BOM)), escapechar="\\",
                           doublequote=False), [])


def column_problem(names: Sequence[str], needed: Sequence[str]) -> str | None:
    """Why the input's column `names` cannot serve: a needed column missing, or named more
    than once (`duplicate_problem`); None when each needed column is there once. Both
    engines' readers raise it as their own `SourceError`."""
    present = set(names)
    missing = [c for c in dict.fromkeys(needed) if c not in present]
    if missing:
        return (f"column(s) {', '.join(map(repr, missing))} not in the input "
                f"(its columns: {', '.join(names)})")
    return duplicate_problem(names, needed)


def duplicate_problem(names: Sequence[str], needed: Sequence[str]) -> str | None:
    """The first needed column the input names more than once (letter case aside, as Spark
    compares names), as a problem sentence; None when each needed column is named once."""
    for column in dict.fromkeys(needed):
        at = [i + 1 for i, name in enumerate(names) if name.lower() == column.lower()]
        if len(at) > 1:
            spelled = ", ".join(f"{names[i - 1]!r} (column {i})" for i in at)
            return (f"the input names column {column!r} {len(at)} times: {spelled}; rename "
                    "the others, or the two engines would read different ones")
    return None


def unique_names(names: Sequence[str]) -> list[str]:
    """The names with each one used more than once (letter case aside) suffixed with its
    0-based position, as Spark's CSV reader renames them."""
    lower = [name.lower() for name in names]
    return [f"{name}{i}" if lower.count(name.lower()) > 1 else name
            for i, name in enumerate(names)]
