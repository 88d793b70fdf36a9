"""`cepplan ARGS...` through its console entry point in the test process: the same argument
parsing, error rendering and exit codes as the `cepplan` command, and the Python warnings a
user would see on stderr, without starting a Python and importing cepplan, pandas and the
solvers again for every call (seconds each under load). Tests about the process itself
(signals, children, the console script, the JVM's output) start a real one."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

from cepplan.cli.app import main


def cepplan(*args: object, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run `cepplan ARGS...` (in `cwd` if given); its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    command, argv, here = ["cepplan", *map(str, args)], sys.argv, Path.cwd()
    sys.argv = command
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _warnings_to(err):
            main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv = argv
        os.chdir(here)
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _warnings_to(stream: io.StringIO):
    """Python's default warning filters, each warning written to `stream` as the interpreter
    writes it to stderr (pytest would otherwise collect them out of sight)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                      ResourceWarning):
            warnings.simplefilter("ignore", quiet)
        try:
            yield
        finally:
            for warning in caught:
                stream.write(warnings.formatwarning(warning.message, warning.category,
                                                    warning.filename, warning.lineno))
