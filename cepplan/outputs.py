"""Where a command may write, checked against its inputs and against what is already there,
before any work starts: a command never deletes or replaces what it did not create
(docs/reliability.md, "Outputs").

- `check_file_outputs(paths, inputs)`: the files a command writes (plan.json, stats.json, a
  report's three files, synth's events and ground truth);
- `check_directory_output(path, command, inputs)`: the directory `run`, `cover`, `generate` or
  `synth-mobile` writes; an existing one only if it is empty or a previous output of the same
  command;
- `written_directory(output)`: where to write that directory; it replaces the old one only
  when the block succeeds, marked with `.cepplan-output`, and file-system errors on the way
  become one line naming it.

`inputs` are `(what, path)` pairs, such as `("workload", "workload.json")`: no output is an
input, holds one, or lies inside an input directory.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from cepplan.errors import InputError, OutputError
from cepplan.interrupt import staged_directory
from cepplan.workload.input_files import is_glob

MARKER = ".cepplan-output"  # in every directory a command writes: which command, which format
MARKER_FORMAT = "cepplan.output/1"
NAME_MAX = 255  # bytes in one file name (Linux and macOS file systems)
PATH_MAX = 4096  # bytes in a path, its terminating NUL included
# What each directory-writing command puts in its directory (the entries that identify an
# earlier output written before the marker existed) and what it always writes.
LAYOUTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "run": (frozenset({"matches", "timed_out", "results", "metrics.json"}),
            frozenset({"metrics.json"})),
    "cover": (frozenset({"results", "metrics.json"}), frozenset({"metrics.json"})),
    "generate": (frozenset({"job.py", "runtime.zip", "job.json", "plan.json"}),
                 frozenset({"job.py", "job.json"})),
    "synth-mobile": (frozenset({"events.jsonl", "workload.json"}),
                     frozenset({"events.jsonl", "workload.json"})),
}
# the file system refusing a write: reported as one line, as is any error on a file being
# written into the staging directory; any other error is a bug and keeps its traceback
STORAGE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS,
                            errno.ENAMETOOLONG})

Inputs = Iterable[tuple[str, str | Path]]


@dataclass(frozen=True)
class DirectoryOutput:
    """A checked directory output: as the user named it, and where it is (links followed)."""

    given: Path
    real: Path
    command: str


def event_inputs(paths: Iterable[str | Path]) -> list[tuple[str, str]]:
    """Event files, directories and globs as inputs (a glob as the files it matches; a URL
    such as hdfs://... is not on this machine's file system and is left out)."""
    found = []
    for path in map(str, paths):
        if "://" in path:
            continue
        for match in (sorted(glob.glob(path)) if is_glob(path) else [path]):
            found.append(("event directory" if os.path.isdir(match) else "event file", match))
    return found


def check_file_outputs(paths: Sequence[Path], inputs: Inputs,
                       option: str = "--output") -> None:
    """Each of `paths` can be written as a file: not a directory, a block device or a socket
    (a FIFO or a character device is written through), not an input nor inside an input
    directory, a name and path the file system takes, in a folder that can be written."""
    from cepplan.fileio import stream_target  # orjson: not in the generated job's environment

    inputs = list(inputs)
    for path in paths:
        _check_length(path)
        if path.is_dir():
            raise InputError.single(str(path), "", f"is a directory; {option} needs a file "
                                    "name")
        try:
            stream_target(Path(os.path.realpath(path)), path)
        except OSError as exc:  # a loop of links, say; a block device is an OutputError
            raise OutputError.from_os(path, exc) from None
        _check_inputs(path, inputs, directory=False)
        _check_parent(Path(os.path.realpath(path)), path)


def check_directory_output(path: Path, command: str, inputs: Inputs,
                           option: str = "--output") -> DirectoryOutput:
    """`path` can be (re)placed by `command`'s output directory: not a file, not an input,
    holding none and not inside an input directory; if it exists, empty (and not the current
    directory) or a previous output of `command`. A link to a directory stays: the directory
    it points to is replaced."""
    _check_length(path)
    if path.exists() and not path.is_dir():
        raise InputError.single(str(path), "", f"is a file; {option} needs a directory "
                                "(it is replaced on success)")
    _check_inputs(path, list(inputs), directory=True)
    real = Path(os.path.realpath(path))
    if real.is_dir():
        refusal = _not_replaceable(real, command)
        if refusal:
            raise InputError.single(str(path), "", f"{refusal}; name a new directory")
    _check_parent(real, path)
    return DirectoryOutput(path, real, command)


@contextlib.contextmanager
def written_directory(output: DirectoryOutput) -> Iterator[Path]:
    """A path inside a hidden staging directory for the writer to create; when the block ends
    normally it is marked as the command's output and renamed over the directory. A
    file-system error (a full disk, a read-only file system) is an `OutputError` naming it."""
    from cepplan.fileio import write_bytes_atomic  # orjson: see check_file_outputs

    staging = None
    try:
        with staged_directory(output.real) as staged:
            staging = staged.parent
            yield staged
            if staged.is_dir():
                marker = {"format": MARKER_FORMAT, "command": output.command}
                write_bytes_atomic(staged / MARKER, json.dumps(marker).encode() + b"\n")
    except OutputError as err:
        raise OutputError(output.given, err.problem) from None
    except OSError as exc:
        name = exc.filename
        inside = staging is not None and isinstance(name, (str, bytes)) and Path(
            os.fsdecode(name)).absolute().is_relative_to(staging)
        if exc.errno not in STORAGE_ERRORS and not inside:
            raise
        raise OutputError.from_os(output.given, exc) from None


def _not_replaceable(real: Path, command: str) -> str | None:
    """Why the existing directory `real` must not be replaced by `command`'s output, or None
    (empty, or a previous output of `command`)."""
    entries = sorted(os.listdir(real))
    holds_cwd = Path(os.path.realpath(os.curdir)).is_relative_to(real)
    if not entries and not holds_cwd:
        return None
    allowed, required = LAYOUTS[command]
    marked = _marker_command(real / MARKER)
    if marked is not None and marked != command:
        return f"is a previous `cepplan {marked}` output, not one of `cepplan {command}`"
    foreign = [name for name in entries if name not in allowed | {MARKER}]
    if not foreign and (marked or required <= set(entries)):
        return None
    where = "is the current directory or holds it" if holds_cwd else "is not empty"
    listing = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                        else "")
    holding = f" (it holds {listing})" if foreign else ""
    return f"{where} and is not a previous `cepplan {command}` output{holding}"


def _marker_command(marker: Path) -> str | None:
    """The command named by an output directory's marker file, if it has a readable one."""
    try:
        content = json.loads(marker.read_bytes())
    except (OSError, ValueError):
        return None
    command = content.get("command") if isinstance(content, dict) else None
    return command if isinstance(command, str) else None


def _check_inputs(path: Path, inputs: list[tuple[str, str | Path]], *,
                  directory: bool) -> None:
    """No output is an input (same file, through links too), holds one (a directory output)
    or lies inside an input directory."""
    real = Path(os.path.realpath(path))
    for what, given in inputs:
        source = Path(os.path.realpath(given))
        if real == source or _same_file(path, Path(given)):
            problem = (f"is the {what} {given}: writing it would replace an input of this "
                       "command; name another file")
        elif directory and source.is_relative_to(real):
            problem = (f"holds the {what} {given}: replacing it would delete an input of "
                       "this command; name a new directory")
        elif source.is_dir() and real.is_relative_to(source):
            problem = (f"is inside the {what} {given}: it would be read as input the next "
                       "time; name a place outside it")
        else:
            continue
        raise InputError.single(str(path), "", problem)


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _check_length(path: Path) -> None:
    """Names and paths no file system takes are refused before any work."""
    absolute = os.fsencode(os.path.abspath(path))
    for name in absolute.split(b"/"):
        if len(name) > NAME_MAX:
            raise InputError.single(str(path), "", f"file name too long: {len(name)} bytes in "
                                    f"one name, the most is {NAME_MAX}")
    if len(absolute) >= PATH_MAX:
        raise InputError.single(str(path), "", f"path too long: {len(absolute):,} bytes; a "
                                f"path must be shorter than {PATH_MAX:,}")


def _check_parent(real: Path, shown: Path) -> None:
    """The first existing folder above `real` (the rest is created on write) is a writable
    directory on a file system mounted read-write; errors name `shown`, the user's path."""
    parent = real.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError.single(str(shown), "", f"cannot write: {parent} is not a directory")
    if os.statvfs(parent).f_flag & os.ST_RDONLY:
        raise InputError.single(str(shown), "", f"cannot write: read-only file system "
                                f"({parent})")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError.single(str(shown), "", f"cannot write into {parent}: permission "
                                "denied")
