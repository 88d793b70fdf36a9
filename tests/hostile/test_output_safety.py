"""No output option destroys a user's files (docs/reliability.md, "Outputs"): a directory
output replaces only an empty directory or a previous output of the same command; no output
is, holds or lies inside an input; links, FIFOs and devices are written through, never
replaced; a command's set of files is replaced together or not at all."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.hostile.output_project import (
    DIRECTORY_WRITERS,
    EVENTS,
    FILE_WRITERS,
    INPUTS,
    WRITERS,
    command,
    lost,
    snapshot,
)

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

FILE_NAMES = {"optimize": "new-plan.json", "stats": "new-stats.json", "synth": "new.jsonl",
              "compare": "new-report.html"}


# -- directory outputs: never the project, an input, or a folder of the user's ---------------

@pytest.mark.parametrize("out", [".", "./", "..", "PROJECT"])
@pytest.mark.parametrize("name", DIRECTORY_WRITERS)
def test_directory_output_is_never_the_current_folder_or_above(cli, project, tmp_path, name,
                                                               out):
    """`run plan.json data/events.jsonl -o .` deleted the whole project and exited 0."""
    before = snapshot(tmp_path)
    result = cli(*command(name, project if out == "PROJECT" else out))
    result.one_error("name a new directory")  # it holds the inputs, or is not an output
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", list(WRITERS))
def test_empty_output_path_refused(cli, project, tmp_path, name):
    """`-o ""` (an unset `$OUT`) meant the current directory: deleted for `run`, a traceback
    for `compare` and `synth`."""
    before = snapshot(tmp_path)
    cli(*command(name, "")).one_error("--output", "empty")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", DIRECTORY_WRITERS)
def test_a_folder_of_the_users_is_refused(cli, project, tmp_path, name):
    before = snapshot(tmp_path)
    cli(*command(name, "docs")).one_error("docs", "not a previous", f"cepplan {name}")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("args", "fragment"), [
    (["run", "plan.json", EVENTS, "-o", "data"], "data/events.jsonl"),
    (["cover", "plan.json", EVENTS, "-o", "data"], "data/events.jsonl"),
    (["run", "plan.json", "data", "-o", "data/out"], "inside"),
    (["cover", "plan.json", "data", "-o", "data/out"], "inside"),
    (["run", "plan.json", EVENTS, "-o", "data/events.jsonl/out"], "not a directory"),
    (["generate", "plan.json", "-o", "."], "plan.json"),
])
def test_directory_output_holding_or_inside_an_input_refused(cli, project, tmp_path, args,
                                                             fragment):
    """`run ... -o data` deleted the events it was reading."""
    before = snapshot(tmp_path)
    cli(*args, "-q").one_error(fragment)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", DIRECTORY_WRITERS)
def test_previous_output_is_replaced_anything_else_refused(cli, project, name):
    """The same command may replace its own earlier output (marked, or written before the
    marker existed); a file the user added to it, or another command's output, is kept."""
    out = project / "out"
    assert cli(*command(name, out)).code == 0
    assert json.loads((out / ".cepplan-output").read_text())["command"] == name
    first = snapshot(out)
    assert cli(*command(name, out)).code == 0  # its own output: replaced
    assert snapshot(out).keys() == first.keys()
    (out / ".cepplan-output").unlink()  # as written by an earlier version
    assert cli(*command(name, out)).code == 0
    (out / "mine.txt").write_text("my notes on this run")
    cli(*command(name, out)).one_error("mine.txt", "not a previous")
    assert (out / "mine.txt").read_text() == "my notes on this run"
    other = "generate" if name != "generate" else "run"
    before = snapshot(project)
    (out / "mine.txt").unlink()
    cli(*command(other, out)).one_error(f"previous `cepplan {name}` output")
    assert lost(before, snapshot(project), ("out/mine.txt",)) == []


@pytest.mark.parametrize("name", DIRECTORY_WRITERS)
def test_an_empty_folder_is_filled_and_a_link_to_a_folder_stays_a_link(cli, project,
                                                                       tmp_path, name):
    (project / "empty").mkdir()
    assert cli(*command(name, "empty")).code == 0
    assert (project / "empty" / ".cepplan-output").is_file()
    os.symlink(project / "empty", tmp_path / "link")
    assert cli(*command(name, tmp_path / "link")).code == 0
    assert (tmp_path / "link").is_symlink()
    assert os.readlink(tmp_path / "link") == str(project / "empty")
    assert (project / "empty" / ".cepplan-output").is_file()
    assert not [p for p in project.iterdir() if p.name.startswith(".")]  # no staging left


def test_spark_checks_its_outputs_before_spark_starts(cli, project, tmp_path):
    before = snapshot(tmp_path)
    cli("run", "plan.json", EVENTS, "-o", "docs", "--engine", "spark", "-q").one_error(
        "not a previous")
    cli("stats", EVENTS, "-w", "workload.json", "-o", EVENTS, "--engine", "spark",
        "-q").one_error(EVENTS)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("out", "fragment"), [("docs", "not a previous"),
                                               ("data", "holds the event file")])
def test_generated_job_checks_its_out_before_spark_starts(project, capsys, out, fragment):
    """The job `cepplan generate` writes, run by hand with spark-submit, replaced any folder
    named by --out."""
    from cepplan.engine_adapter.spark.job import main

    before = snapshot(project)
    assert main(["--job", "job.json", "--events", EVENTS, "--out", out]) == 2
    assert fragment in capsys.readouterr().err
    assert snapshot(project) == before


# -- file outputs: never an input ---------------------------------------------------------------

@pytest.mark.parametrize(("name", "out", "fragment"), [
    ("optimize", "workload.json", "workload.json"),
    ("optimize", "./workload.json", "workload.json"),
    ("optimize", "ABSOLUTE/workload.json", "workload.json"),
    ("optimize", "link-to-workload", "workload.json"),
    ("optimize", "hard-link-to-workload", "workload.json"),
    ("stats", EVENTS, EVENTS),
    ("stats", "workload.json", "workload.json"),
    ("synth", "workload.json", "workload.json"),
    ("compare", "workload.html", "workload.json"),
    ("compare", "workload.md", "workload.json"),
    ("compare", "workload", "workload.json"),
])
def test_file_output_that_is_an_input_refused(cli, project, tmp_path, name, out, fragment):
    """`optimize workload.json -o workload.json`, `stats events.csv -o events.csv`,
    `compare workload.json -o workload.html` overwrote their input and exited 0."""
    os.symlink("workload.json", project / "link-to-workload")
    os.link(project / "workload.json", project / "hard-link-to-workload")
    out = out.replace("ABSOLUTE", str(project))
    before = snapshot(tmp_path)
    cli(*command(name, out)).one_error(fragment, "input")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("args", "fragment"), [
    (["optimize", "workload.json", "--stats", "stats.json", "-o", "stats.json"], "stats.json"),
    (["compare", "workload.json", "--stats", "stats.json", "-o", "stats.html"], "stats.json"),
    (["stats", "data/*.jsonl", "-w", "workload.json", "-o", EVENTS], EVENTS),
    (["stats", "data", "-w", "workload.json", "-o", "data/stats.json"], "inside"),
    (["compare", "workload.json", "--events", "data", "-o", "data/report.html"], "inside"),
    (["synth", "ev.truth.json", "-o", "ev.jsonl"], "ev.truth.json"),
])
def test_other_inputs_are_refused_as_outputs_too(cli, project, tmp_path, args, fragment):
    """The statistics, event globs and folders, and a workload where synth's ground truth
    goes (`ev.truth.json` beside `ev.jsonl`)."""
    assert cli("stats", EVENTS, "-w", "workload.json", "-o", "stats.json", "-q").code == 0
    shutil.copy(project / "workload.json", project / "ev.truth.json")
    before = snapshot(tmp_path)
    cli(*args, "-q").one_error(fragment)
    assert snapshot(tmp_path) == before


# -- links, FIFOs and devices: written through, never replaced ----------------------------------

@pytest.mark.parametrize("name", ["optimize", "stats", "synth"])
def test_fifo_output_is_written_through(cli, project, name):
    fifo = project / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so the writer's open does not wait
    try:
        fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, 1 << 20)  # room for the whole output
        assert cli(*command(name, fifo)).code == 0
        received = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(reader, 1 << 16):
                received += chunk
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    first = received.splitlines()[0]
    assert first.startswith(b"{")  # a JSON document or JSON lines


@pytest.mark.parametrize("name", ["optimize", "stats", "synth"])
def test_character_device_output_is_written_through(cli, project, name):
    """As root, `optimize -o /dev/null` replaced the system's /dev/null with a regular file.
    The same device (1, 3) made in the test's folder."""
    null = project / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("device nodes cannot be made here")
    assert cli(*command(name, null)).code == 0
    after = null.lstat()
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == os.makedev(1, 3)


def test_block_device_output_refused(cli, project):
    block = project / "disk"
    try:
        os.mknod(block, stat.S_IFBLK | 0o600, os.makedev(7, 250))  # a loop device number
    except PermissionError:
        pytest.skip("device nodes cannot be made here")
    cli(*command("optimize", block)).one_error("disk", "block device")
    assert stat.S_ISBLK(block.lstat().st_mode)


@pytest.mark.parametrize("name", FILE_WRITERS)
def test_symlink_output_is_written_through(cli, project, tmp_path, name):
    """The link stays a link and its target gets the output (a missing target is created)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / FILE_NAMES[name]
    link = project / FILE_NAMES[name]
    os.symlink(target, link)
    assert cli(*command(name, link)).code == 0  # the target did not exist: created
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.is_file() and target.stat().st_size > 0
    target.write_text("earlier")
    assert cli(*command(name, link)).code == 0
    assert link.is_symlink() and target.read_text() != "earlier"


# -- compare -o DIR (issue 29) ------------------------------------------------------------------

@pytest.mark.parametrize("out", ["reports", "reports/", "."])
def test_compare_into_a_directory_refused_before_planning(cli, project, tmp_path, out):
    """`compare WORKLOAD -o /tmp` wrote /tmp.html, /tmp.md and /tmp.json at the root."""
    (project / "reports").mkdir()
    before = snapshot(tmp_path)
    cli(*command("compare", out)).one_error("is a directory", "report.html")
    assert snapshot(tmp_path) == before


# -- any output path, property-based ------------------------------------------------------------

SHAPES = ["", ".", "..", "workload.json", "plan.json", EVENTS, "notes.txt", "data", "docs",
          "prev", "new", "new.json", "data/new", "data/new.json", "workload.json/x",
          "link-workload", "link-data", "link-data/new.json"]


def _may_change(name: str, out: Path, base: Path, existed: bool) -> tuple[str, ...]:
    """What the command may (re)write, relative to `base`: a file output (and its siblings)
    anywhere; a directory output only where nothing or its own earlier output was."""
    real = Path(os.path.realpath(out))
    if not real.is_relative_to(base) or real == base:
        return ()
    rel = real.relative_to(base)
    if name in DIRECTORY_WRITERS:
        return (str(rel),) if not existed or rel.name == "prev" else ()
    if name == "compare":
        stem = rel.with_suffix("") if rel.suffix in (".html", ".md", ".json") else rel
        return tuple(str(stem) + s for s in (".html", ".md", ".json"))
    if name == "synth":
        return (str(rel), str(rel.with_name(rel.name.split(".")[0] + ".truth.json")))
    return (str(rel),)


@pytest.mark.parametrize("name", list(WRITERS))
@settings(max_examples=20, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from(SHAPES), absolute=st.booleans(), slash=st.booleans())
@example(shape="workload.json", absolute=False, slash=False)  # the reported cases
@example(shape=".", absolute=False, slash=False)
@example(shape="", absolute=False, slash=False)
def test_any_output_path_loses_nothing(cli, output_template, tmp_path, name, shape, absolute,
                                       slash):
    """Wherever `-o` points relative to the inputs, the command refuses (exit 2, one line) or
    succeeds; every input keeps its bytes and nothing else that existed is gone or changed."""
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    project = base / "proj"
    shutil.copytree(output_template, project, symlinks=True)
    os.symlink("workload.json", project / "link-workload")
    os.symlink("data", project / "link-data")
    with contextlib.chdir(project):
        if shape == "prev" and name in DIRECTORY_WRITERS:
            assert cli(*command(name, "prev")).code == 0
        out = (str(project / shape) if absolute and shape else shape) + (
            "/" if slash and shape else "")
        existed = os.path.lexists(out) if out else True
        before = snapshot(base)
        result = cli(*command(name, out))
        after = snapshot(base)
    assert result.code in (0, 2), result.err
    assert "Traceback" not in result.err
    if result.code == 2:
        assert len(result.errors) == 1, result.err
    inputs = [f"proj/{path}" for path in INPUTS[name]]
    assert {k: after.get(k) for k in inputs} == {k: before[k] for k in inputs}
    may_change = () if not out else _may_change(name, project / out, base, existed)
    assert lost(before, after, may_change) == []
    shutil.rmtree(base)
