"""`cepplan validate WORKLOAD...`: check workload files, printing every problem found."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.errors import InputError
from cepplan.terminal import counted, echo, problem_text, warn


def validate(
    workloads: list[Path] = typer.Argument(..., metavar="WORKLOAD...",
                                           help="The workload.json files to check."),
    quiet: bool = options.quiet(),
) -> None:
    """Check each workload's shape and meaning, reporting every problem; exit 2 if any."""
    from cepplan.workload import load_workload
    from cepplan.workload.context_model import context_issues

    failed = 0
    for path in workloads:
        try:
            workload = load_workload(path)
        except InputError as err:
            failed += 1
            for problem in err.problems:
                echo(problem_text(problem), err=True)
            continue
        for issue in context_issues(workload):
            warn(f"{path}: {issue.path}: {issue.message}")
        if not quiet:
            written = {p.output_name for p in workload.patterns}  # alternatives: one pattern
            echo(f"ok: {path} ({counted(len(written), 'pattern')}, "
                 f"{counted(len(workload.event_types), 'event type')})")
    if failed:
        echo(f"{failed} of {counted(len(workloads), 'workload')} invalid", err=True)
        raise typer.Exit(2)
