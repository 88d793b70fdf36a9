"""The options every `cepplan` command shares, defined once so all commands spell them alike.

The convention (docs/cli.md): the files a command acts on are positional arguments; every file
or directory it writes is `-o/--output`; a second input is a named option (`-w/--workload`,
`--stats`); `-q/--quiet` and `-v/--verbose` wherever progress is printed; durations such as
`--time-step` are text with a unit ("30s", "5min"; a bare number is in the workload's time unit);
choices are Enums, so the help lists their values. New options should follow these helpers.
This module imports nothing heavy: `cepplan --help` must stay fast.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from cepplan.errors import InputError
from cepplan.limits import MAX_WORKERS
from cepplan.terminal import echo


class Solver(str, Enum):
    """How each pattern's detection plans are searched."""

    auto = "auto"
    dp = "dp"
    heuristic = "heuristic"


class Strategy(str, Enum):
    """How the k plans a pattern offers its parents are picked (planner/strategies.py)."""

    mixture = "mixture"
    random = "random"
    min_latency = "min-latency"
    min_cost = "min-cost"
    balanced = "balanced"


class Search(str, Enum):
    """How the evaluation pass chooses and shares patterns' evaluation trees."""

    tabu = "tabu"
    sa = "sa"
    sh = "sh"
    re = "re"
    none = "none"


class Sharing(str, Enum):
    """What the evaluation search may share: any common subtree, or only common join-order
    prefixes (every pattern a left-deep join order)."""

    subtree = "subtree"
    prefix = "prefix"


class CoveringSolver(str, Enum):
    """How covering selections of consumer queries are chosen (planner/covering.py)."""

    auto = "auto"
    cpsat = "cpsat"
    mqc = "mqc"
    mnh = "mnh"


class CoverRun(str, Enum):
    """`cepplan cover --solver`: a covering solver, or none to evaluate without reuse."""

    auto = "auto"
    cpsat = "cpsat"
    mqc = "mqc"
    mnh = "mnh"
    none = "none"


class Engine(str, Enum):
    """Where a command evaluates: in this process, on Spark, or chosen by the input's size."""

    auto = "auto"
    local = "local"
    spark = "spark"


class PlanKind(str, Enum):
    """The plan a job evaluates: the given one, or the unoptimised baseline."""

    plan = "plan"
    trivial = "trivial"


class MatchFormat(str, Enum):
    """How `cepplan run` writes the matches."""

    jsonl = "jsonl"
    parquet = "parquet"


def choice(default: Enum, flag: str, help_text: str) -> Any:
    """An Enum option; long lists of values go into the help text, so the column stays narrow."""
    values = [member.value for member in type(default)]
    if len("|".join(values)) <= 24:
        return typer.Option(default, flag, help=help_text)
    return typer.Option(default, flag, metavar="NAME",
                        help=f"{help_text} One of: {', '.join(values)}.")


def output(help_text: str, default: Path | None = None) -> Any:
    """`-o/--output PATH`: every file or directory a command writes (required without default)."""
    return typer.Option(default if default is not None else ..., "-o", "--output",
                        help=help_text, show_default=default is not None,
                        parser=output_path, metavar="PATH")


def output_path(text: str | Path) -> Path:
    """An `-o/--output` value; an empty one (an unset `$OUT`) is refused, not taken for the
    current directory."""
    if not str(text):
        raise typer.BadParameter("the path is empty (an unset variable?); name a file or "
                                 "directory")
    return Path(text)


def workload_option(help_text: str = "The workload.json (default: the one the plan names).",
                    required: bool = False) -> Any:
    """`-w/--workload PATH`: the workload, when it is not the command's main input."""
    return typer.Option(... if required else None, "-w", "--workload", help=help_text)


def quiet() -> Any:
    """`-q/--quiet`: print nothing but errors and warnings."""
    return typer.Option(False, "-q", "--quiet", help="Print nothing but errors and warnings.")


def verbose() -> Any:
    """`-v/--verbose`: show the log of the engine underneath (Spark's own messages)."""
    return typer.Option(False, "-v", "--verbose", help="Also show Spark's own log lines.")


def master() -> Any:
    """`--master URL`: the Spark master, as spark-submit spells it; giving one means Spark."""
    return typer.Option(None, "--master", help="Spark master URL, as for spark-submit "
                        "(implies --engine spark under auto; default local[*]).")


def time_step(help_text: str, default: str | None = None) -> Any:
    """`--time-step DURATION`: text with a unit, or a bare number in the workload's unit."""
    return duration("--time-step", default, help_text)


def duration(flag: str, default: str | None, help_text: str,
             bare: str = "the workload's time unit") -> Any:
    """A duration option: text with a unit ("30s", "5min"), or a bare number in `bare`; read
    with `duration_value`."""
    return typer.Option(default, flag, metavar="DURATION",
                        help=f"{help_text} A duration such as 30s or 5min; a bare number is "
                        f"in {bare}.")


def events_argument(required: bool = True) -> Any:
    """`EVENTS...`: event files, directories, quoted globs ('data/*.csv', expanded as Spark
    expands them) or URLs for Spark (hdfs://...), read as text (a `Path` would fold `//`)."""
    return typer.Argument(... if required else None, metavar="EVENTS..." if required
                          else "[EVENTS]...", help="Event files, directories or quoted "
                          "globs ('data/*.csv').", show_default=False)


_MEMORY = re.compile(r"^([1-9][0-9]{0,8})([kmgt])b?$", re.IGNORECASE)
_MEMORY_UNITS = {"k": 1, "m": 2**10, "g": 2**20, "t": 2**30}  # in KiB
SPARK_MIN_DRIVER_KIB = 450 * 2**10  # Spark refuses to start a driver with less (450m)


def driver_memory() -> Any:
    """`--driver-memory SIZE`: the Spark driver's memory, as spark-submit spells it."""
    return typer.Option("4g", "--driver-memory", metavar="SIZE", parser=memory_size,
                        help="Spark driver memory, as for spark-submit (e.g. 512m, 4g; at "
                        "least 450m).")


def memory_size(text: str) -> str:
    """A JVM memory size as Spark reads it (`512m`, `4g`), with its unit (a bare number would be
    bytes to the JVM) and as much as Spark needs; anything else is refused here, not by a JVM
    failing to start."""
    found = _MEMORY.match(text)
    if not found:
        raise typer.BadParameter(f"expected a size such as 512m or 4g, got {text!r:.40}")
    if int(found[1]) * _MEMORY_UNITS[found[2].lower()] < SPARK_MIN_DRIVER_KIB:
        raise typer.BadParameter(f"Spark needs at least 450m for its driver, got {text!r}")
    return text


def workers() -> Any:
    """`--workers N|auto`: processes of the in-process engine (default 1: each worker gets an
    Nth of the memory budget, reads its range's margins again and costs a process; docs/engine.md,
    "Workers")."""
    return typer.Option(1, "--workers", metavar="N|auto", parser=worker_count,
                        help="Processes the in-process engine reads and matches time ranges in "
                        f"(1 to {MAX_WORKERS}, or auto: the cores this process may use; "
                        "default 1).")


def worker_count(text: str | int) -> int:
    """A number of worker processes, 1 to `MAX_WORKERS`, or `auto` (the usable cores);
    anything else is refused here."""
    text = str(text)  # the default arrives as the number itself
    if text.strip() == "auto":
        from cepplan.engine_adapter.local.workers import usable_cores
        return usable_cores()
    try:
        count = int(text.strip())
    except ValueError:
        raise typer.BadParameter(f"expected a whole number of worker processes or auto, got "
                                 f"{text!r:.40}") from None
    if not 1 <= count <= MAX_WORKERS:
        raise typer.BadParameter(f"expected 1 to {MAX_WORKERS} worker processes, got {count}")
    return count


SEED_MAX = 2**63 - 1  # seeds are written into plan.json and stats.json as 64-bit integers


def seed(help_text: str) -> Any:
    """`--seed N`: the random seed of a randomised step."""
    return typer.Option(0, "--seed", min=0, max=SEED_MAX, help=help_text)


def duration_value(option: str, text: str, time_unit: str) -> float:
    """A duration option's value in the workload's time unit; a bad one is an option error."""
    from cepplan.workload.durations import DurationError, parse_duration

    try:
        value: Any = float(text)
    except ValueError:
        value = text
    try:
        return parse_duration(value, time_unit)
    except DurationError as err:
        raise option_error(option, str(err)) from None


def option_error(option: str, message: str) -> InputError:
    """An error about a command-line option: rendered `error: --option: message`, exit 2."""
    return InputError.single(option, "", message)


def command_with_aliases(renames: dict[str, str]) -> type[TyperCommand]:
    """A command class accepting old option spellings: `renames` maps each old spelling to the
    new one ("" when the option became a positional argument) and prints a note on stderr."""

    class AliasedCommand(TyperCommand):
        def parse_args(self, ctx, args: list[str]) -> list[str]:
            return super().parse_args(ctx, rename_options(args, renames))

    return AliasedCommand


def rename_options(args: list[str], renames: dict[str, str]) -> list[str]:
    """`args` with each old spelling in `renames` replaced (and a deprecation note printed);
    the values of an option that became the trailing arguments (renamed to "") move to the
    end, where those arguments stand (`compare --events e.csv w.json`: `compare w.json
    e.csv`)."""
    renamed: list[str] = []
    trailing: list[str] = []
    noted: set[str] = set()
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            return renamed + args[index - 1:] + trailing
        flag, equals, value = arg.partition("=")
        if flag not in renames:
            renamed.append(arg)
            continue
        new = renames[flag]
        if flag not in noted:
            noted.add(flag)
            instead = f"use {new}" if new else "give it as an argument, without the option"
            echo(f"note: {flag} is deprecated: {instead}", err=True)
        if new:
            renamed.append(f"{new}={value}" if equals else new)
        elif equals:
            trailing.append(value)
        elif index < len(args):
            trailing.append(args[index])
            index += 1
    return renamed + trailing
