"""`cepplan cover PLAN EVENTS... -o DIR`: evaluate the plan's consumer queries with
reuse of covering selections, in-process; one result per query and window plus metrics."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.cli.options import CoverRun
from cepplan.terminal import echo, warn


def cover_command(
    plan: Path = typer.Argument(..., metavar="PLAN",
                                help="The plan.json whose consumer queries to evaluate."),
    events: list[Path] = typer.Argument(..., metavar="EVENTS...", help="Event files."),
    out: Path = options.output("Output directory, replaced on success."),
    workload: Path | None = options.workload_option(),
    solver: CoverRun | None = typer.Option(
        None, "--solver", metavar="NAME", help="Override the plan's covering solver. One of: "
        "auto, cpsat, mqc, mnh, or none (no reuse)."),
    quiet: bool = options.quiet(),
) -> None:
    """Evaluate the plan's consumer queries, reusing covering selections.

    Computes each consumer operator once per covering selection and delivers it to every
    query it serves; writes OUT/results/*.jsonl and OUT/metrics.json and prints the savings.
    """
    from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
    from cepplan.engine_adapter.local.covering_io import read_covering_rows, write_covering_output
    from cepplan.engine_adapter.metrics_table import covering_lines
    from cepplan.engine_adapter.runtime.covering_run import run_covering
    from cepplan.errors import InputError
    from cepplan.outputs import check_directory_output, event_inputs, written_directory
    from cepplan.stats.rejected_rows import check_rejected

    chosen, loaded = plan_and_workload(plan, workload, warn=warn)
    files = event_paths(events)
    target = check_directory_output(out, "cover", [("plan", plan), ("workload", loaded.path),
                                                   *event_inputs(files)])  # before any work
    if not chosen.covering:
        raise InputError.single(str(plan), "covering", "the plan has no consumer queries "
                                "(the workload declares no `consumers`)")
    frame, read, rejected = read_covering_rows(files, loaded, chosen.covering)
    warning = check_rejected(", ".join(files), read, rejected, files, loaded)
    if warning:  # an error instead, before anything is written, when no row is usable
        echo(warning, err=True, lines=False)
    run = run_covering(frame, chosen.covering, solver=solver.value if solver else None)
    metrics = {"engine": "local", "covering": run.metrics}
    with written_directory(target) as staged:  # renamed over --output only on success
        write_covering_output(staged, run.results, metrics)
    if quiet:
        return
    for line in covering_lines(run.metrics):
        echo(line, lines=False)
    echo(f"results and metrics.json written to {out}")
