"""The `cepplan` command: one Typer app; each command lives in its own module.

Bad input (`CepplanError`) is printed as one clear message per problem on stderr with exit code
2 and no traceback; `--debug`, before or after the command, shows the traceback too.
"""

from __future__ import annotations

import inspect
import signal
import sys
import traceback
from collections.abc import Callable

import typer

import cepplan
from cepplan.cli import (
    compare_cmd,
    cover_cmd,
    generate_cmd,
    import_cmd,
    mobility_cmd,
    optimize_cmd,
    replay_cmd,
    run_cmd,
    serve_cmd,
    show_cmd,
    stats_cmd,
    synth_cmd,
    validate_cmd,
)
from cepplan.cli.options import command_with_aliases
from cepplan.errors import CepplanError, InputError
from cepplan.interrupt import interruption, signals_interrupt, stop_children
from cepplan.terminal import echo, problem_text

app = typer.Typer(
    name="cepplan",
    help="Plan complex event processing workloads cheaply: measure your events, search the "
    "cheapest detection plans, explain them, and run them.",
    epilog="Run `cepplan COMMAND --help` for a command's options; conventions: docs/cli.md.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}
USAGE_ERROR = typer.BadParameter.__mro__[1]  # Click's UsageError, wherever Typer's Click lives


def _version(value: bool) -> None:
    if value:
        echo(f"cepplan {cepplan.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors (also "
                               "accepted after the command)."),
) -> None:
    """cepplan: optimizer-as-a-service for complex event processing."""
    _state["debug"] = _state["debug"] or debug


# Old option spellings still accepted, with a note on stderr (docs/cli.md, "Deprecated").
_OUTPUT = {"--out": "--output"}

def _command(name: str, function: Callable[..., None],
             renames: dict[str, str] | None = None) -> None:
    """Register `function` as the command `name`, with `renames` as old option spellings."""
    app.command(name, help=unwrapped(function.__doc__ or ""),
                cls=command_with_aliases(renames) if renames else None)(function)


def unwrapped(doc: str) -> str:
    """A docstring as help text, each paragraph on one line: the help keeps a docstring's line
    breaks, which at another terminal width break sentences mid-line."""
    return "\n\n".join(" ".join(paragraph.split())
                        for paragraph in inspect.cleandoc(doc).split("\n\n"))


_command("validate", validate_cmd.validate)
_command("show", show_cmd.show)
_command("optimize", optimize_cmd.optimize_command, {**_OUTPUT, "--k": "-k"})
_command("synth", synth_cmd.synth)
_command("stats", stats_cmd.stats)
_command("generate", generate_cmd.generate_command, _OUTPUT)
_command("run", run_cmd.run_command, {**_OUTPUT, "--events": ""})
_command("replay", replay_cmd.replay_command)
_command("compare", compare_cmd.compare_command, {"--events": ""})
_command("serve", serve_cmd.serve_command)
_command("cover", cover_cmd.cover_command, {**_OUTPUT, "--events": ""})
_command("synth-mobile", mobility_cmd.synth_mobile)
_command("import", import_cmd.import_command)


def main() -> None:
    """Console entry point: run the app, turning cepplan's errors into exit code 2 and an
    interruption (Ctrl-C, SIGTERM) into one line and exit code 130 / 143."""
    try:
        _main()
    except BaseException as err:
        stop = interruption(err)  # also when a library turned it into an error of its own
        if stop is None:
            raise
        for signum in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C: finish tidying up
            signal.signal(signum, signal.SIG_IGN)
        stop_children()  # e.g. the JVM of `cepplan stats`, which would outlive us
        echo(f"cepplan: {stop.describe()}", err=True)
        sys.exit(stop.exit_code)


def _main() -> None:
    args, debug = without_debug(sys.argv[1:])
    _state["debug"] = debug
    try:
        with signals_interrupt():
            code = app(args=args, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except USAGE_ERROR as err:  # Click's own checks (choices, types, unknown options)
        if type(err).__name__ != "NoArgsIsHelpError":  # that one has printed the help
            echo(f"error: {_usage_message(err)}", err=True, lines=False)
        sys.exit(err.exit_code)
    except CepplanError as err:
        if interruption(err):
            raise
        if _state["debug"]:
            traceback.print_exc()
        problems = err.problems if isinstance(err, InputError) else ()
        for problem in problems:
            echo(problem_text(problem), err=True)
        if not problems:
            echo(f"error: {err}", err=True)
        sys.exit(2)


def without_debug(args: list[str]) -> tuple[list[str], bool]:
    """The arguments without `--debug`, and whether it was given: the option is the app's,
    but a user adds it where the command failed, after the command as often as before."""
    end = args.index("--") if "--" in args else len(args)
    kept = [arg for arg in args[:end] if arg != "--debug"]
    return kept + args[end:], len(kept) < end


def _usage_message(err: Exception) -> str:
    """A Click usage error in cepplan's one-line shape: `--option: problem`."""
    param = getattr(err, "param", None)
    if isinstance(err, typer.BadParameter) and param is not None and err.message:
        name = "/".join(param.opts) if param.opts else (param.human_readable_name or "")
        return f"{name}: {err.message}"
    names, ctx = [], getattr(err, "ctx", None)
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    command = " ".join(["cepplan", *reversed(names)])
    return f"{err.format_message()} (see '{command} --help')"
