"""Errors a user can act on: each names the file, the place in it and the problem.

Everything cepplan rejects because of its input raises `InputError` (one or many `Problem`s);
the CLI prints them and exits with code 2, without a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where it is and what is wrong.

    `path` is a JSON path such as `patterns[2].where[1]` (empty for the whole file); `excerpt`
    optionally carries extra lines (a predicate with a caret under the offending character).
    """

    file: str
    path: str
    message: str
    excerpt: str = ""

    def render(self) -> str:
        where = f"{self.file}: {self.path}: " if self.path else f"{self.file}: "
        text = where + self.message
        if self.excerpt:
            text += "\n" + "\n".join("    " + line for line in self.excerpt.splitlines())
        return text


def json_path(parts: Iterable[str | int]) -> str:
    """A `Problem.path` from its parts: `patterns[2].where[1]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}" if part.isidentifier() else f"[{part!r}]"
        else:
            out = part if part.isidentifier() else f"[{part!r}]"
    return out


class CepplanError(Exception):
    """Base class of cepplan's own exceptions."""


class InputError(CepplanError):
    """Bad user input: one or more problems, all reported together."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = tuple(problems)
        super().__init__("\n".join(p.render() for p in self.problems))

    @classmethod
    def single(cls, file: str, path: str, message: str, excerpt: str = "") -> InputError:
        return cls([Problem(file, path, message, excerpt)])


class OutputError(InputError):
    """A file or directory that could not be written (a full disk, a read-only file system,
    a name too long): one line naming it and the problem."""

    def __init__(self, path: object, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__([Problem(self.path, "", f"cannot write: {problem}")])

    @classmethod
    def from_os(cls, path: object, exc: OSError) -> OutputError:
        """The OSError `exc`, raised while writing `path`, as one line."""
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        return cls(path, reason[:1].lower() + reason[1:])
