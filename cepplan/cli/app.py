"""The `cepplan` command: one Typer app; each command lives in its own module.

Bad input (`CepplanError`) is printed as one clear message per problem on stderr with exit code
2 and no traceback; `cepplan --debug COMMAND` shows the traceback too.
"""

from __future__ import annotations

import signal
import sys
import traceback

import typer

import cepplan
from cepplan.cli import (
    generate_cmd,
    optimize_cmd,
    run_cmd,
    show_cmd,
    stats_cmd,
    synth_cmd,
    validate_cmd,
)
from cepplan.errors import CepplanError, InputError
from cepplan.interrupt import Interrupted, signals_interrupt, stop_children

app = typer.Typer(
    name="cepplan",
    help="Optimize complex event processing workloads: measure, plan, explain, generate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cepplan {cepplan.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    """cepplan: optimizer-as-a-service for complex event processing."""
    _state["debug"] = debug


app.command("validate")(validate_cmd.validate)
app.command("show")(show_cmd.show)
app.command("optimize")(optimize_cmd.optimize_command)
app.command("synth")(synth_cmd.synth)
app.command("stats")(stats_cmd.stats)
app.command("generate")(generate_cmd.generate_command)
app.command("run")(run_cmd.run_command)


def main() -> None:
    """Console entry point: run the app, turning cepplan's errors into exit code 2 and an
    interruption (Ctrl-C, SIGTERM) into one line and exit code 130 / 143."""
    try:
        with signals_interrupt():
            app()
    except Interrupted as stop:
        for signum in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C: finish tidying up
            signal.signal(signum, signal.SIG_IGN)
        stop_children()  # e.g. the JVM of `cepplan stats`, which would outlive us
        print(f"cepplan: {stop.describe()}", file=sys.stderr)
        sys.exit(stop.exit_code)
    except CepplanError as err:
        if _state["debug"]:
            traceback.print_exc()
        problems = err.problems if isinstance(err, InputError) else ()
        for problem in problems:
            print(f"error: {problem.render()}", file=sys.stderr)
        if not problems:
            print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
