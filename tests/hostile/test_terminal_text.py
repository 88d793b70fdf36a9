"""Names from users' files reach the terminal without their control characters. Workload,
context, operator and query names, string literals in predicates and event type values in the
data may hold any text: printed raw, `\\x1b]52;c;...\\x07` sets the clipboard, `\\x1b]0;...`
retitles the window, C1 `\\x9b` starts a CSI sequence. Every command prints them as visible
escapes (`\\x1b]52`), through the one helper `cepplan.terminal`."""

from __future__ import annotations

import ast
import csv
import json
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cepplan.terminal import printable
from tests.hostile.conftest import EXAMPLES, ROOT
from tests.hostile_workloads import mobile_named, traffic_named

# OSC 52 (clipboard), OSC 0 (window title), C1 CSI (clear screen), C1 OSC ended by C1 ST, DEL,
# SGR 8 (hidden text), a carriage return that would overwrite the line
PAYLOAD = "\x1b]52;c;cHduZWQ=\x07\x1b]0;owned\x07\x9b2J\x9d0;t\x9c\x7f\x1b[8m\rX"
SHOWN = "\\x1b]52;c;cHduZWQ="  # how the clipboard sequence prints instead
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but \t and \n, DEL, C1


def neutral(outcome) -> str:
    """The command's whole output, checked to hold no control character but tab and newline."""
    text = outcome.out + outcome.err
    assert not CONTROL.search(text), CONTROL.findall(text)
    return text


def hostile_traffic(folder: Path, literal: str = f"exit{PAYLOAD}") -> Path:
    """The traffic example with the payload in the workload's name, a context's name and a
    string literal of a predicate."""
    path = folder / "workload.json"
    path.write_text(json.dumps(traffic_named(f"traffic{PAYLOAD}", f"congestion{PAYLOAD}",
                                             literal)))
    return path


def hostile_mobile(folder: Path) -> Path:
    """The mobile example with the payload in its operator's name and a query's id."""
    path = folder / "workload.json"
    path.write_text(json.dumps(mobile_named("mobile", f"avg{PAYLOAD}", f"car{PAYLOAD}")))
    return path


def test_show_prints_names_as_visible_escapes(cli, tmp_path):
    text = neutral(cli("show", hostile_traffic(tmp_path)))
    assert f"workload traffic{SHOWN}" in text and f"'exit{SHOWN}" in text


@pytest.mark.parametrize(("hostile", "name"), [(hostile_traffic, "congestion"),
                                             (hostile_mobile, "avg")],
                         ids=["context", "operator"])
def test_optimize_table_prints_names_as_visible_escapes(cli, tmp_path, hostile, name):
    outcome = cli("optimize", hostile(tmp_path), "-o", tmp_path / "plan.json", "--time-limit",
                  "2", "--search", "none")
    assert outcome.code == 0, outcome.err
    assert f"{name}{SHOWN}" in neutral(outcome)


def test_run_metrics_table_prints_context_names_as_visible_escapes(cli, tmp_path):
    workload = hostile_traffic(tmp_path)
    plan = tmp_path / "plan.json"
    assert cli("optimize", workload, "-o", plan, "-q", "--time-limit", "2",
               "--search", "none").code == 0
    outcome = cli("run", plan, EXAMPLES / "traffic" / "events.csv", "-o", tmp_path / "out")
    assert outcome.code == 0, outcome.err
    assert f"congestion{SHOWN}" in neutral(outcome)


def test_error_quoting_a_predicate_prints_it_as_visible_escapes(cli, tmp_path):
    """The predicate excerpt under an error line quotes the user's text."""
    raw = json.loads((EXAMPLES / "stocks" / "workload.json").read_text())
    raw["patterns"][0]["where"] = [f"a.peak < 'x{PAYLOAD}' +"]
    path = tmp_path / "workload.json"
    path.write_text(json.dumps(raw))
    for command in (("validate", path), ("show", path)):
        outcome = cli(*command)
        assert outcome.code == 2
        assert SHOWN in neutral(outcome)


def test_error_naming_unknown_contexts_prints_them_as_visible_escapes(cli, tmp_path):
    raw = json.loads(hostile_traffic(tmp_path).read_text())
    raw["patterns"][0]["contexts"] = [f"nowhere{PAYLOAD}\nerror: forged line"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    outcome = cli("validate", path)
    assert outcome.code == 2
    neutral(outcome)
    assert all(line.startswith(("error:", "    ", "1 of")) for line in outcome.err.splitlines())


def test_stats_error_naming_event_types_of_the_data_prints_them_as_visible_escapes(
        cli, fraud):
    """Event type values come from the data: `--strict` names the unknown ones."""
    events = fraud / "events.csv"
    with events.open(newline="") as handle:
        rows = list(csv.reader(handle))
    rows.append([f"Ghost{PAYLOAD}", *rows[1][1:]])  # the type column comes first
    with events.open("w", newline="") as handle:
        csv.writer(handle, quoting=csv.QUOTE_ALL).writerows(rows)
    outcome = cli("stats", events, "-w", fraud / "workload.json", "-o", fraud / "stats.json",
                  "--strict", "--engine", "local")
    outcome.one_error("unknown type")
    assert f"Ghost{SHOWN}" in neutral(outcome)


def test_stats_table_prints_predicates_as_visible_escapes(cli, tmp_path):
    """The selectivity table quotes each predicate (rich would also read `[...]` as markup)."""
    workload = hostile_traffic(tmp_path, literal=f"[bold]{PAYLOAD}")
    outcome = cli("stats", EXAMPLES / "traffic" / "events.csv", "-w", workload, "-o",
                  tmp_path / "stats.json", "--engine", "local")
    assert outcome.code == 0, outcome.err
    text = neutral(outcome)
    assert "[bold]" in text and SHOWN in text


@given(st.text())
def test_printable_leaves_no_control_character(text):
    """Checked against Unicode's own categories: Cc (C0, DEL, C1) and the bidirectional
    formatting characters; unchanged text when it holds none."""
    bidi = set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    for lines in (True, False):
        shown = printable(text, lines=lines)
        kept = "\t\n" if lines else "\t"
        assert all(c in kept or (unicodedata.category(c) != "Cc" and c not in bidi
                                 and c not in "\u2028\u2029") for c in shown)
    if not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in bidi
               for c in text.replace("\t", "").replace("\n", "")):
        assert printable(text) == text
        assert printable(text, lines=False) == text.replace("\n", "\\x0a")


def test_commands_print_through_the_terminal_helper():
    """No command prints with `print` or `typer.echo`: everything goes through
    `cepplan.terminal.echo`, so no new output forgets the escaping."""
    offenders = []
    for path in sorted((ROOT / "cepplan" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name in ("print", "typer.echo", "click.echo", "typer.secho"):
                    offenders.append(f"{path.name}:{node.lineno}: {name}")
    assert not offenders, offenders
