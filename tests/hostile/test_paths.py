"""Output paths are checked before any work starts, inputs that cannot be read say so, and no
command writes one of its outputs over another (or over earlier output) by accident."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest


def _plan(cli, fraud, tmp_path):
    plan = tmp_path / "plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "--quiet").code == 0
    return plan


def test_optimize_out_is_a_directory(cli, fraud, tmp_path):
    (tmp_path / "plans").mkdir()
    cli("optimize", fraud / "workload.json", "-o", tmp_path / "plans").one_error(
        "plans", "is a directory")


def test_optimize_out_below_a_file(cli, fraud, tmp_path):
    (tmp_path / "afile").write_text("keep")
    cli("optimize", fraud / "workload.json", "-o", tmp_path / "afile" / "plan.json").one_error(
        "not a directory")
    assert (tmp_path / "afile").read_text() == "keep"


def test_synth_out_is_a_directory(cli, fraud, tmp_path):
    (tmp_path / "ev.csv").mkdir()
    cli("synth", fraud / "workload.json", "-o", tmp_path / "ev.csv").one_error(
        "ev.csv", "is a directory")


def test_synth_truth_name_would_overwrite_the_events(cli, fraud, tmp_path):
    result = cli("synth", fraud / "workload.json", "-o", tmp_path / "ev.truth.json")
    result.one_error("--output", "ground truth")
    assert not (tmp_path / "ev.truth.json").exists()


def test_synth_events_and_truth_apart_and_consistent(cli, fraud, tmp_path):
    result = cli("synth", fraud / "workload.json", "-o", tmp_path / "ev.csv", "--duration",
                 "50", "--quiet")
    assert result.code == 0, result.err
    events = pd.read_csv(tmp_path / "ev.csv")
    truth = json.loads((tmp_path / "ev.truth.json").read_text())
    assert events["event"].value_counts().to_dict() == {
        k: v for k, v in truth["counts"].items() if v}
    assert truth["time_unit"] == "min" and len(truth["workload_digest"]) == 64


def test_stats_out_is_a_directory_before_spark(cli, fraud, tmp_path):
    (tmp_path / "stats.json").mkdir()
    cli("stats", fraud / "events.csv", "-w", fraud / "workload.json", "-o",
        tmp_path / "stats.json").one_error("stats.json", "is a directory")


def test_run_out_is_a_file_before_spark(cli, fraud, tmp_path):
    plan = _plan(cli, fraud, tmp_path)
    target = tmp_path / "results"
    target.write_text("earlier")
    cli("run", plan, "--events", fraud / "events.csv", "--out", target).one_error(
        "results", "is a file")
    assert target.read_text() == "earlier"


def test_generate_out_is_a_file(cli, fraud, tmp_path):
    plan = _plan(cli, fraud, tmp_path)
    (tmp_path / "job").write_text("x")
    cli("generate", plan, "-o", tmp_path / "job").one_error("job", "is a file")


def test_run_missing_event_file(cli, fraud, tmp_path):
    plan = _plan(cli, fraud, tmp_path)
    cli("run", plan, "--events", tmp_path / "nope.csv", "--out", tmp_path / "o").one_error(
        "nope.csv", "event file not found")


def test_stats_missing_event_file(cli, fraud, tmp_path):
    cli("stats", tmp_path / "nope.csv", "-w", fraud / "workload.json", "-o",
        tmp_path / "s.json").one_error("nope.csv", "not found")


@pytest.mark.parametrize("command", ["validate", "show", "optimize"])
def test_missing_workload(cli, tmp_path, command):
    cli(command, tmp_path / "absent.json").one_error("absent.json", "not found")


def test_workload_is_a_directory(cli, tmp_path):
    cli("optimize", tmp_path).one_error(str(tmp_path), "is a directory")


def test_unreadable_workload_says_cannot_read(cli, fraud, monkeypatch):
    """As root every file is readable, so the permission error is raised where reading fails."""
    from pathlib import Path
    real = Path.read_bytes

    def denied(self):
        if self.name == "workload.json":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    line = cli("optimize", fraud / "workload.json", "-o", fraud / "p.json").one_error(
        "workload.json", "cannot read")
    assert "not found" not in line and "does not exist" not in line


@pytest.mark.parametrize("command", ["run", "stats"])
def test_unreadable_event_file_says_cannot_read(cli, fraud, tmp_path, monkeypatch, command):
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p).endswith(
        "events.csv") else real(p, mode, **k))
    if command == "run":
        args = ["run", _plan(cli, fraud, tmp_path), "--events", fraud / "events.csv", "--out",
                tmp_path / "o"]
    else:
        args = ["stats", fraud / "events.csv", "-w", fraud / "workload.json", "-o",
                tmp_path / "s.json"]
    assert "not found" not in cli(*args).one_error("events.csv", "cannot read")


def test_optimize_failure_keeps_earlier_plan(cli, fraud, tmp_path):
    """A failed optimize leaves the earlier plan byte for byte."""
    plan = _plan(cli, fraud, tmp_path)
    before = plan.read_bytes()
    doc = json.loads((fraud / "workload.json").read_text())
    doc["statistics"]["rates"]["Login"] = 1e308
    (fraud / "workload.json").write_text(json.dumps(doc))
    cli("optimize", fraud / "workload.json", "-o", plan).one_error("statistics.rates.Login")
    assert plan.read_bytes() == before
