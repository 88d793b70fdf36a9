"""Shared helpers of the hostile-input suite: the real `cepplan` entry point run in-process
(argument parsing, error rendering and exit codes exactly as a user sees them), a time bound
on every case, and checks of the one-line error shape."""

from __future__ import annotations

import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cepplan.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CASE_SECONDS = 60  # no in-process case may take longer (a hang fails the case, never the suite)


class CaseTimeout(Exception):
    """A hostile case ran past its time bound."""


def pytest_configure(config):
    config.addinivalue_line("markers", "case_seconds(n): time bound of a case that starts "
                            "Spark (its JVM start-up alone takes tens of seconds under load)")


@pytest.fixture(autouse=True)
def time_bound(request):
    """Fail any case that runs longer than CASE_SECONDS (or its `case_seconds` mark)."""
    marker = request.node.get_closest_marker("case_seconds")
    seconds = marker.args[0] if marker else CASE_SECONDS

    def expire(_signum, _frame):
        raise CaseTimeout(f"case still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("error:")]

    def one_error(self, *fragments: str) -> str:
        """Assert exit 2 with exactly one error line holding every fragment; return it."""
        assert self.code == 2, (self.code, self.out, self.err)
        assert "Traceback" not in self.err, self.err
        assert len(self.errors) == 1, self.err
        for fragment in fragments:
            assert fragment in self.errors[0], (fragment, self.errors[0])
        return self.errors[0]


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `cepplan ARGS...` through its console entry point, in-process."""
    def run(*args: object) -> Outcome:
        monkeypatch.setattr(sys, "argv", ["cepplan", *map(str, args)])
        capsys.readouterr()
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capsys.readouterr()
        return Outcome(code, out, err)

    return run


@pytest.fixture
def fraud(tmp_path) -> Path:
    """A private copy of the fraud example (workload, events, ground truth)."""
    folder = tmp_path / "fraud"
    shutil.copytree(EXAMPLES / "fraud", folder)
    return folder


@pytest.fixture(scope="module")
def output_template(tmp_path_factory) -> Path:
    """A small project (`output_project.make_project`), made once per module."""
    from tests.hostile.output_project import make_project

    return make_project(tmp_path_factory.mktemp("template") / "proj")


@pytest.fixture
def project(output_template, tmp_path, monkeypatch) -> Path:
    """A private copy of that project, the current directory of the test."""
    folder = tmp_path / "proj"
    shutil.copytree(output_template, folder, symlinks=True)
    monkeypatch.chdir(folder)
    return folder
