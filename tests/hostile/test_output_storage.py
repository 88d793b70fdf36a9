"""A file system that refuses the write — full, read-only, a name or path too long — ends
every writing command with one line naming the output and the problem, exit code 2, no
traceback; the earlier output is intact and no temporary file or staging directory is left.
Real tmpfs mounts (skipped where mounting is refused)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.hostile.output_project import WRITERS, command, snapshot

OUTPUT_NAMES = {"optimize": "plan.json", "stats": "stats.json", "synth": "ev.jsonl",
                "compare": "report.html", "generate": "out", "run": "out", "cover": "out",
                "synth-mobile": "out"}
PAGE = 4096


@pytest.fixture
def tmpfs(tmp_path):
    """`mount(size)`: a fresh tmpfs of that size at tmp_path/mnt, unmounted at the end."""
    point = tmp_path / "mnt"
    point.mkdir()
    mounted: list[Path] = []

    def mount(size: str = "4m") -> Path:  # room for a generated job (its runtime.zip ~2 MB)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                               str(point)], capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _remount_read_only(point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)


def _fill(point: Path, leave: int = 0) -> None:
    """Write a filler file until the file system is full, then free `leave` bytes (in whole
    pages)."""
    filler = point / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * PAGE):
                pass
    finally:
        os.close(fd)
    if leave:
        size = filler.stat().st_size
        os.truncate(filler, max(0, (size - leave) // PAGE * PAGE))


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("name", list(WRITERS))
def test_full_disk_keeps_the_earlier_output(cli, project, tmpfs, name):
    """(A match writer's thread printed its own traceback when the disk filled.)"""
    point = tmpfs()
    out = point / OUTPUT_NAMES[name]
    assert cli(*command(name, out)).code == 0
    _fill(point)
    before = snapshot(point)
    cli(*command(name, out)).one_error(OUTPUT_NAMES[name].split(".")[0],
                                       "no space left on device")
    assert snapshot(point) == before


@pytest.mark.parametrize("name", list(WRITERS))
def test_read_only_file_system_keeps_the_earlier_output(cli, project, tmpfs, name):
    point = tmpfs()
    out = point / OUTPUT_NAMES[name]
    assert cli(*command(name, out)).code == 0
    before = snapshot(point)
    _remount_read_only(point)
    cli(*command(name, out)).one_error("read-only file system")
    assert snapshot(point) == before


@pytest.mark.parametrize("name", list(WRITERS))
def test_file_name_over_255_bytes_refused(cli, project, tmp_path, name):
    before = snapshot(tmp_path)
    long_name = "n" * 300 + Path(OUTPUT_NAMES[name]).suffix
    cli(*command(name, tmp_path / "new" / long_name)).one_error("too long", "255")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", list(WRITERS))
def test_path_over_4096_bytes_refused(cli, project, tmp_path, name):
    before = snapshot(tmp_path)
    deep = Path(*["d" * 200] * 21) / OUTPUT_NAMES[name]  # 4,221 bytes and more
    cli(*command(name, tmp_path / deep)).one_error("too long", "4,096")
    assert snapshot(tmp_path) == before


def test_compare_set_is_replaced_together_or_not_at_all(cli, project, tmpfs):
    """Room for each new file alone except report.html (written last), not for all three:
    the three earlier files stay, not new .json and .md beside an old .html."""
    point = tmpfs()
    assert cli(*command("compare", point / "report.html")).code == 0
    sizes = {s: (point / f"report{s}").stat().st_size for s in (".json", ".md", ".html")}
    assert sizes[".html"] > sizes[".json"] > sizes[".md"]
    _fill(point, leave=(sizes[".json"] + sizes[".html"]) // 2)
    before = snapshot(point)
    cli(*command("compare", point / "report.html")).one_error("no space left on device")
    assert snapshot(point) == before


def test_disk_filling_while_timed_out_matches_are_moved_aside(cli, tmpfs, tmp_path):
    """A run whose timed-out partial matches are moved from the staged part files into
    OUT/timed_out/ on a disk with a few pages left, for several numbers of pages: it either
    writes both folders whole (the first run's files) or ends with one line naming the
    output, the earlier output intact, nothing staged left."""
    from tests.engine.test_timed_out import followed_run

    followed_run(tmp_path)
    point = tmpfs("512k")
    out = point / "out"
    assert cli("run", tmp_path / "plan.json", tmp_path / "events.csv", "-o", out, "-q").code == 0
    first = _matches(snapshot(out))
    _fill(point)
    filler = point / "filler"
    full = filler.stat().st_size
    outcomes = set()
    for pages in range(2, 20, 3):
        os.truncate(filler, max(0, full - pages * PAGE))
        before = snapshot(point)
        done = cli("run", tmp_path / "plan.json", tmp_path / "events.csv", "-o", out, "-q")
        if done.code:
            done.one_error("out", "no space left on device")
            assert snapshot(point) == before, pages
        else:
            assert _matches(snapshot(out)) == first, pages
        outcomes.add(done.code)
    assert outcomes == {0, 2}


def _matches(entries: dict[str, tuple]) -> dict[str, tuple]:
    """A run output's snapshot without metrics.json (its timings differ run to run)."""
    return {k: v for k, v in entries.items() if k != "metrics.json"}
