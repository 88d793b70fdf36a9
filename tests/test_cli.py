"""The `cepplan` command as a user runs it: installed entry point, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

import cepplan
from cepplan.cli.app import app
from tests.conftest import EXAMPLES, ROOT


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cepplan", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_version():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"cepplan {cepplan.__version__}"


def test_validate_all_examples_exit_0():
    files = [str(p) for p in sorted(EXAMPLES.glob("*/workload.json"))]
    result = run("validate", *files)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("ok: ") == len(files)


def test_show_bad_workload_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "cepplan.workload/1", "time_unit": "s",
                               "event_types": {"A": {"attributes": {"v": "double"}}},
                               "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"],
                                             "within": 1}]}))
    result = run("show", str(bad))
    assert result.returncode == 2
    assert f"error: {bad}: patterns[0].structure[2]: unknown event type 'B'" in result.stderr
    assert "Traceback" not in result.stderr
    debug = run("--debug", "show", str(bad))
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_show_missing_file_exits_2():
    result = run("show", "no/such/workload.json")
    assert result.returncode == 2
    assert "no/such/workload.json: file not found" in result.stderr


def test_show_prints_patterns_classes_and_tree():
    result = CliRunner().invoke(app, ["show", str(EXAMPLES / "network" / "workload.json")])
    assert result.exit_code == 0
    out = result.stdout
    assert "syn_flood = SEQ(s1:syn, s2:syn, s3:syn, !a:ack)  within 2 s" in out
    assert "where [join s1,s2] s1.dst == s2.dst" in out
    assert "    p: port_scan (complex) [shared]" in out
    assert "shared subevents: ack, port_scan, syn" in out


def test_unknown_command_is_a_usage_error():
    result = run("frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_show_marks_a_strict_kleene_back_to_back_with_its_bounds(tmp_path):
    """A KLEENE under `strict` is shown back to back and a bounded one with its {n,m}, as the
    format doc writes them; a Kleene+ under `any` stays `b:B+`."""
    path = tmp_path / "w.json"
    leaf = {"attributes": {"v": "long"}}
    path.write_text(json.dumps({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {"A": leaf, "B": leaf, "C": leaf},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B", {"max": 3}],
                                                 "c:C", ["KLEENE", "d:B"]],
                      "within": 5, "strategy": {"b": "strict"}},
                     {"name": "q", "structure": ["SEQ", "a:A", ["KLEENE", "b:B", {"min": 2}],
                                                 "c:C"], "within": 5}]}))
    out = CliRunner().invoke(app, ["show", str(path)]).stdout
    (p_line,) = [line for line in out.splitlines() if line.startswith("  p = ")]
    assert ", b:B{1,3} back to back, " in p_line and p_line.endswith(", d:B+)  within 5 s")
    assert "'back to back' a KLEENE with no other event of the partition between" in out
    assert "  q = SEQ(a:A, b:B{2,}, c:C)  within 5 s" in out
