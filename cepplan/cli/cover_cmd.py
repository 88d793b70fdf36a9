"""`cepplan cover PLAN EVENTS... -o DIR`: evaluate the plan's consumer queries with
reuse of covering selections, in-process; one result per query and window plus metrics."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.cli.options import CoverRun


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
    from cepplan.engine_adapter.covering_io import read_event_frame, write_covering_output
    from cepplan.engine_adapter.covering_run import run_covering
    from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
    from cepplan.errors import InputError

    chosen, loaded = plan_and_workload(plan, workload)
    if not chosen.covering:
        raise InputError.single(str(plan), "covering", "the plan has no consumer queries "
                                "(the workload declares no `consumers`)")
    frame = read_event_frame(event_paths(events), loaded)
    run = run_covering(frame, chosen.covering, solver=solver.value if solver else None)
    metrics = {"engine": "local", "covering": run.metrics}
    write_covering_output(out, run.results, metrics)
    if quiet:
        return
    m = run.metrics
    typer.echo(f"{m['selections']} query windows; operator executions: "
               f"{m['executions_without_reuse']} without reuse, {m['executions_with_reuse']} "
               f"with reuse (saving {100 * m['saved_share']:.0f}%)")
    quality = m["qor_of_reused"]
    if quality:
        typer.echo(f"reused results: {m['reused_results']}; lowest precision "
                   f"{quality['precision']['min']:.2f}, recall {quality['recall']['min']:.2f}, "
                   f"disparity {quality['disparity']['min']:.2f}; results below their "
                   f"thresholds: {m['threshold_violations']}")
    record = m["solver"]
    typer.echo(f"covers solved: {record['statuses']} by {record['solvers']} in "
               f"{record['seconds_total']:.2f} s; greedy fallbacks: {record['fallbacks']}")
    typer.echo(f"results and metrics.json written to {out}")
