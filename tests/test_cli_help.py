"""The command line's help and conventions (docs/cli.md): every command's help fits 100
columns, lists every choice, renders flags as flags; old spellings still work; start-up imports
nothing heavy; no user-facing text names a paper, a seed or an algorithm number."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from enum import Enum
from itertools import pairwise
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cepplan.cli import options
from cepplan.cli.app import app
from cepplan.errors import InputError
from cepplan.planner.strategies import STRATEGIES
from tests.conftest import EXAMPLES, ROOT
from tests.in_process import cepplan

COMMANDS = sorted(typer.main.get_command(app).commands)
HEAVY = ("pandas", "pyspark", "pyarrow", "scipy", "ortools", "numpy", "jsonschema", "networkx")


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "100"},
                                terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_fits_100_columns_and_shows_flags_as_flags(command):
    text = _help(*([command] if command else []))
    too_wide = [line for line in text.splitlines() if len(line) > 100]
    assert not too_wide, too_wide
    assert "<bool>" not in text and "BOOLEAN" not in text
    group = typer.main.get_command(app)
    params = group.commands[command].params if command else group.params
    for param in params:
        if not getattr(param, "is_flag", False) or param.hidden:
            continue
        long_name = max(param.opts, key=len)
        line = next(line for line in text.splitlines() if f"{long_name} " in line)
        rest = line.split(long_name, 1)[1]
        between = rest[:rest.index(param.help.split()[0])].split()
        assert set(between) <= set(param.opts), f"{long_name} shown with a value: {line}"


def test_every_choice_is_listed_in_the_help():
    """Each Enum option's values appear in its command's help (either as [a|b] or listed)."""
    command_group = typer.main.get_command(app)
    checked = 0
    for name in COMMANDS:
        text = re.sub(r"[\s│]+", " ", _help(name))
        for param in command_group.commands[name].params:
            if hasattr(param.type, "choices"):
                for value in param.type.choices:
                    value = value.value if isinstance(value, Enum) else value
                    assert value in text, (name, param.name, value)
                checked += 1
    assert checked >= 5  # optimize --solver/--strategy, generate/run --plan-kind, run --format


def test_strategy_choices_are_the_planners():
    assert tuple(s.value for s in options.Strategy) == STRATEGIES


def test_command_summaries_are_whole_sentences():
    """The command list shows each summary complete: one line in the docstring, a full stop."""
    top = re.sub(r"[\s│]+", " ", _help())
    for name, command in typer.main.get_command(app).commands.items():
        summary = (command.help or "").strip().split("\n\n")[0]
        assert "\n" not in summary and summary.endswith("."), (name, summary)
        assert re.sub(r"\s+", " ", summary) in top, (name, summary)


def test_importing_the_app_loads_nothing_heavy():
    code = ("import sys, cepplan.cli.app; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_old_spellings_still_work_with_a_note(tmp_path):
    workload = str(EXAMPLES / "fraud" / "workload.json")
    result = cepplan("optimize", workload, "--out", tmp_path / "p.json", "--k", "2", "-q",
                     cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "note: --out is deprecated: use --output" in result.stderr
    assert "note: --k is deprecated: use -k" in result.stderr
    assert (tmp_path / "p.json").exists() and result.stdout == ""


def test_rename_options_turns_an_option_into_the_trailing_arguments():
    renames = {"--out": "--output", "--events": ""}
    assert options.rename_options(
        ["plan.json", "--events", "a.csv", "--events=b.csv", "--out=o", "--", "--out"],
        renames) == ["plan.json", "--output=o", "--", "--out", "a.csv", "b.csv"]
    assert options.rename_options(["--events", "e.csv", "w.json", "-q"], renames) == \
        ["w.json", "-q", "e.csv"]


TABLE_ROW = re.compile(r"^\| `cepplan ([\w-]+)([^`]*)` \|[^|]*\| ([^|]*) \|$", re.M)


def _table() -> dict[str, tuple[str, str]]:
    """docs/cli.md's command table: command -> (its usage after the name, what it writes)."""
    text = (ROOT / "docs" / "cli.md").read_text()
    return {name: (usage, writes) for name, usage, writes in TABLE_ROW.findall(text)}


def test_the_docs_command_table_lists_every_command_as_it_is_declared():
    """Every registered command is in docs/cli.md's table with its arguments in order, and its
    `-o` shown required (`-o X`), defaulted (`[-o X]`, the default named) or absent."""
    table = _table()
    commands = typer.main.get_command(app).commands
    assert set(table) == set(commands)
    for name, command in commands.items():
        usage, writes = table[name]
        words = re.findall(r"[\w.-]+|\[|\]", usage)
        arguments = [p.human_readable_name.strip("[].") for p in command.params
                     if p.param_type_name == "argument"]
        shown = [w.rstrip(".") for w in words if w.isupper() and not w.startswith("-")]
        assert shown[:len(arguments)] == arguments, (name, usage)
        output = next((p for p in command.params if "--output" in p.opts), None)
        if output is None:
            assert "-o" not in words, name
        elif output.required:
            assert "-o" in words and words[words.index("-o") - 1] != "[", (name, usage)
        else:
            assert words[words.index("-o") - 1] == "[", (name, usage)
            assert f"(default `{output.default}`)" in writes, (name, writes)


def test_output_is_required_for_directories_and_synth_and_defaulted_for_documents():
    """The rule of docs/cli.md: `-o` required where the output is a directory or data only
    the user can name; a default name where the command writes one document."""
    commands = typer.main.get_command(app).commands
    required = {name for name, c in commands.items()
                for p in c.params if "--output" in p.opts and p.required}
    defaults = {name: str(p.default) for name, c in commands.items()
                for p in c.params if "--output" in p.opts and not p.required}
    assert required == {"synth-mobile", "generate", "run", "cover", "synth"}
    assert defaults == {"stats": "stats.json", "optimize": "plan.json",
                        "compare": "report.html", "import": "workload.json"}


def test_time_step_takes_a_unit_everywhere(tmp_path):
    workload = str(EXAMPLES / "fraud" / "workload.json")
    runner = CliRunner()
    bad = runner.invoke(app, ["optimize", workload, "-o", str(tmp_path / "p.json"),
                              "--time-step", "1x"])
    assert isinstance(bad.exception, InputError)
    assert str(bad.exception).startswith("--time-step: cannot read duration '1x'")
    seconds = runner.invoke(app, ["optimize", workload, "-o", str(tmp_path / "a.json"), "-q",
                                  "--time-step", "30s", "--search", "none"])
    minutes = runner.invoke(app, ["optimize", workload, "-o", str(tmp_path / "b.json"), "-q",
                                  "--time-step", "0.5", "--search", "none"])
    assert seconds.exit_code == 0 and minutes.exit_code == 0, seconds.output
    # 30s is half of the fraud workload's minute: both plans are the same
    assert _without_provenance(tmp_path / "a.json") == _without_provenance(tmp_path / "b.json")


def _without_provenance(path: Path) -> str:
    return re.sub(r'"(provenance|created|seconds)":\s*(\{[^{}]*\}|"[^"]*"|[0-9.e-]+)', "",
                  path.read_text())


def test_option_errors_have_one_prefix_style(tmp_path):
    workload = str(EXAMPLES / "fraud" / "workload.json")
    cases = [["optimize", workload, "-o", str(tmp_path / "p.json"), "--time-step", "1x"],
             ["synth", workload, "-o", str(tmp_path / "e.csv"), "--duration", "-1"],
             ["synth", workload, "-o", str(tmp_path / "e.csv"), "--rate", "Nope=1"]]
    for args in cases:
        done = cepplan(*args, cwd=ROOT)
        assert done.returncode == 2, done.stderr
        flag = next(a for a in args if a.startswith("--") and a != "--output")
        assert done.stderr.startswith(f"error: {flag}: "), done.stderr
        assert "<command line>" not in done.stderr


def _printable_strings() -> list[tuple[str, str]]:
    """Every string literal in cepplan's code outside docstrings and comments: what the CLI,
    its errors and the generated job can print."""
    found = []
    for path in sorted((ROOT / "cepplan").rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    return found


def test_no_user_facing_text_names_a_paper():
    words = re.compile(r"seed 0\d\d|§|Algorithm \d|Definition \d|Theorem \d|\bThm\b")
    offending = [(where, text) for where, text in _printable_strings() if words.search(text)]
    assert not offending, offending


def test_examples_output_names_no_paper(tmp_path):
    runner = CliRunner()
    texts = []
    for workload in sorted(EXAMPLES.glob("*/workload.json")):
        for args in (["show", str(workload)],
                     ["optimize", str(workload), "-o", str(tmp_path / "p.json")]):
            result = runner.invoke(app, args)
            assert result.exit_code == 0, (args, result.output)
            texts.append(result.output)
    assert not re.search(r"seed 0\d\d|§|Algorithm \d", "\n".join(texts))


@pytest.mark.parametrize("command", COMMANDS)
def test_help_paragraphs_wrap_at_any_width(command):
    """A command's description is rewrapped to the terminal: at 80 columns no line ends short
    in mid-paragraph (the docstring's own line breaks at ~96 columns are not kept)."""
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80"},
                                terminal_width=80)
    prose = result.output.split("╭")[0].splitlines()
    for line, following in pairwise(prose):
        if line.strip() and following.strip() and not line.lstrip().startswith("Usage:"):
            assert len(line.rstrip()) > 60, (command, line, following)


def test_validate_counts_in_words(tmp_path):
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"format": "cepplan.workload/1", "time_unit": "s",
                               "event_types": {"A": {"attributes": {}}},
                               "patterns": [{"name": "p", "structure": ["SEQ", "a:A"],
                                             "within": 5}]}))
    result = CliRunner().invoke(app, ["validate", str(one)])
    assert result.exit_code == 0, result.output
    assert result.output == f"ok: {one} (1 pattern, 1 event type)\n"


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_h_is_help(command):
    args = [command] if command else []
    short = CliRunner().invoke(app, [*args, "-h"], env={"COLUMNS": "100"}, terminal_width=100)
    assert short.exit_code == 0 and short.output == _help(*args)
