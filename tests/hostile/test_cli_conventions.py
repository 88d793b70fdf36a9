"""One convention on every command (docs/cli.md): event inputs as trailing arguments, given as
files, directories or quoted globs alike; durations with units; `--driver-memory` wherever
Spark starts (that it reaches the driver: tests/covering/test_spark_run.py, on the Spark run
that test makes anyway); `--debug` before or after the command; a file of the wrong kind named
for what it is; summaries in words, never a program's data structures."""

from __future__ import annotations

import json
import re

import pytest
import typer

from cepplan.cli import options
from cepplan.cli.app import app
from tests.hostile.output_project import EVENTS

RUN = ["--engine", "local", "-q"]


def _json(path) -> dict:
    return json.loads(path.read_text())


def _matches_and_results(folder) -> tuple[dict, dict]:
    """What a run found (matches per pattern, the consumer queries' results), not its timings."""
    metrics = _json(folder / "metrics.json")
    results = sorted(p.read_text() for p in (folder / "results").glob("*.jsonl"))
    return metrics["matches"], {"rows_read": metrics["rows_read"], "results": results}


@pytest.mark.parametrize("given", ["data", "data/*.jsonl", "data/events.json?"],
                         ids=["directory", "glob", "glob-2"])
def test_run_and_cover_read_directories_and_quoted_globs_as_the_file(cli, project, given):
    assert cli("run", "plan.json", EVENTS, "-o", "by-file", *RUN).code == 0
    assert cli("run", "plan.json", given, "-o", "by-pattern", *RUN).code == 0
    assert _matches_and_results(project / "by-pattern") == \
        _matches_and_results(project / "by-file")
    assert cli("cover", "plan.json", EVENTS, "-o", "c-file", "-q").code == 0
    assert cli("cover", "plan.json", given, "-o", "c-pattern", "-q").code == 0
    assert _json(project / "c-pattern" / "metrics.json")["covering"]["selections"] == \
        _json(project / "c-file" / "metrics.json")["covering"]["selections"]


@pytest.mark.parametrize("command", [
    ["run", "plan.json", "nothing/*.jsonl", "-o", "out", *RUN],
    ["cover", "plan.json", "nothing/*.jsonl", "-o", "out", "-q"],
    ["stats", "nothing/*.jsonl", "-w", "workload.json", "-o", "s.json", "-q"],
    ["compare", "workload.json", "nothing/*.jsonl", "-o", "r.html", "-q"],
], ids=["run", "cover", "stats", "compare"])
def test_a_glob_matching_nothing_is_one_error_before_any_work(cli, project, command):
    cli(*command).one_error("nothing/*.jsonl", "no file or directory matches this pattern")
    assert not any((project / name).exists() for name in ("out", "s.json", "r.html"))


def test_compare_takes_event_files_as_arguments_and_the_old_option_with_a_note(cli, project):
    plain = cli("compare", "workload.json", "data", "-o", "a.html", "-q", "--time-limit", "30")
    assert plain.code == 0 and "note:" not in plain.err, plain.err
    old = cli("compare", "--events", EVENTS, "workload.json", "-o", "b.html", "-q",
              "--time-limit", "30")
    assert old.code == 0, old.err
    assert "note: --events is deprecated: give it as an argument" in old.err
    measured = [_json(project / name)["measured"] for name in ("a.json", "b.json")]
    assert measured[0]["rows_read"] == measured[1]["rows_read"] > 0
    assert [r["matches"] for r in measured[0]["runs"]] == \
        [r["matches"] for r in measured[1]["runs"]]


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_is_accepted_before_or_after_the_command(cli, project, where):
    command = ["run", "workload.json", EVENTS, "-o", "out"]
    args = ["--debug", *command] if where == "before" else [*command, "--debug"]
    shown = cli(*args)
    assert shown.code == 2 and "Traceback (most recent call last)" in shown.err
    hidden = cli(*command)
    assert hidden.code == 2 and "Traceback" not in hidden.err


@pytest.mark.parametrize(("command", "fragment"), [
    (["run", "workload.json", EVENTS, "-o", "out"],
     "this is a workload, not a plan: plan it first with `cepplan optimize workload.json"),
    (["cover", "workload.json", EVENTS, "-o", "out"],
     "this is a workload, not a plan: plan it first with `cepplan optimize workload.json"),
    (["generate", "workload.json", "-o", "job"],
     "this is a workload, not a plan: plan it first with `cepplan optimize workload.json"),
    (["run", "plan.json", EVENTS, "-w", "plan.json", "-o", "out"],
     "this is a plan, not a workload: give the workload.json it was made for"),
    (["optimize", "workload.json", "--stats", "workload.json", "-o", "p.json"],
     "this is a workload, not a statistics file: measure the events with `cepplan stats"),
    (["stats", EVENTS, "-w", "plan.json", "-o", "s.json"],
     "this is a plan, not a workload"),
], ids=["run", "cover", "generate", "run-w", "optimize-stats", "stats-w"])
def test_a_file_of_the_wrong_kind_is_named_for_what_it_is(cli, project, command, fragment):
    cli(*command).one_error("format", fragment)


def test_synth_mobile_durations_take_units_and_bare_numbers_stay_seconds(cli, tmp_path):
    base = ["--cars", "6", "--consumers", "2", "-q", "--seed", "3"]
    assert cli("synth-mobile", "-o", tmp_path / "units", "--duration", "1min", "--window",
               "500ms", "--batch", "5s", *base).code == 0
    assert cli("synth-mobile", "-o", tmp_path / "bare", "--duration", "60", "--window", "0.5",
               "--batch", "5", *base).code == 0
    for name in ("events.jsonl", "workload.json"):
        assert (tmp_path / "units" / name).read_bytes() == (tmp_path / "bare" / name).read_bytes()
    workload = _json(tmp_path / "units" / "workload.json")
    assert workload["consumers"]["batch"]["time"] == 5
    assert {q["window"]["time"] for q in workload["consumers"]["queries"]} == {0.5}
    times = [json.loads(line)["t"] for line in
             (tmp_path / "units" / "events.jsonl").read_text().splitlines()]
    assert 50 < max(times) <= 60


@pytest.mark.parametrize("flag", ["--duration", "--window", "--batch"])
def test_synth_mobile_refuses_an_unreadable_duration(cli, tmp_path, flag):
    cli("synth-mobile", "-o", tmp_path / "m", flag, "2 fortnights", "-q").one_error(
        flag, "cannot read duration")
    assert not (tmp_path / "m").exists()


SPARK_COMMANDS = ("run", "stats")


def test_driver_memory_is_on_every_command_that_starts_spark():
    """The commands with `--master` (they can start Spark) are the ones with
    `--driver-memory`."""
    commands = typer.main.get_command(app).commands
    with_master = {name for name, c in commands.items()
                   if any("--master" in p.opts for p in c.params)}
    with_memory = {name for name, c in commands.items()
                   if any("--driver-memory" in p.opts for p in c.params)}
    assert with_master == with_memory == set(SPARK_COMMANDS)


@pytest.mark.parametrize("command", [
    ["run", "plan.json", EVENTS, "-o", "out", "--engine", "spark"],
    ["stats", EVENTS, "-w", "workload.json", "-o", "s.json", "--engine", "spark"],
], ids=SPARK_COMMANDS)
@pytest.mark.parametrize(("size", "problem"), [
    *((size, "expected a size such as 512m or 4g") for size in
      ("lots", "4 g", "-1g", "0", "4q", "2", "4096")),
    *((size, "Spark needs at least 450m for its driver") for size in ("100m", "1k", "449m")),
])
def test_a_driver_memory_spark_cannot_read_is_refused_before_spark_starts(cli, project,
                                                                           command, size,
                                                                           problem):
    cli(*command, "--driver-memory", size).one_error("--driver-memory", problem)
    assert not (project / "out").exists() and not (project / "s.json").exists()


@pytest.mark.parametrize("size", ["450m", "512M", "4g", "1gb", "2T"])
def test_a_driver_memory_spark_reads_is_accepted(size):
    assert options.memory_size(size) == size


REPR = re.compile(r"[{\[]'|'[}\]]|\{\"")  # {'a': 1}, ['a'], {"a": ...}


def test_cover_and_run_print_words_not_python_values(cli, project):
    cover = cli("cover", "plan.json", EVENTS, "-o", "c")
    run = cli("run", "plan.json", EVENTS, "-o", "r", "--engine", "local")
    assert cover.code == run.code == 0, (cover.err, run.err)
    for outcome in (cover, run):
        assert not REPR.search(outcome.out), outcome.out
    assert re.search(r"covers solved: \d+ \w+(, \d+ \w+)*, by \w+ \(\d+\)", cover.out), cover.out


@pytest.mark.parametrize("command", [
    ["run", "plan.json", "empty", "-o", "out", *RUN],
    ["run", "plan.json", "empty", "-o", "out", "--engine", "spark", "-q"],
    ["cover", "plan.json", "empty", "-o", "out", "-q"],
    ["stats", "empty", "-w", "workload.json", "-o", "s.json", "-q"],
    ["stats", "empty", "-w", "workload.json", "-o", "s.json", "--engine", "spark", "-q"],
    ["compare", "workload.json", "empty", "-o", "r.html", "-q"],
], ids=["run", "run-spark", "cover", "stats", "stats-spark", "compare"])
def test_a_directory_without_event_files_is_one_error_before_any_work(cli, project, command):
    """Hidden and `_` files are skipped (as Spark skips them), so a directory holding only
    those has no events: said so, not as an empty CSV or a failed Spark job."""
    (project / "empty").mkdir()
    (project / "empty" / "_SUCCESS").write_text("")
    (project / "empty" / ".notes").write_text("x\n")
    cli(*command).one_error("empty", "no event files in this directory")
    assert not any((project / name).exists() for name in ("out", "s.json", "r.html"))


def test_a_failed_spark_job_s_own_error_is_printed_once_prefixed():
    from cepplan.engine_adapter.spark.submit import failure_message

    lines = ["26/11/27 04:13:25 INFO SparkContext: Running Spark", "error: e.csv: no usable rows",
             "error: f.csv: no usable rows"]
    assert failure_message(lines, 2) == "e.csv: no usable rows\nerror: f.csv: no usable rows"
