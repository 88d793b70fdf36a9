"""`cepplan cover plan.json --events PATH --out DIR`: evaluate the plan's consumer queries with
reuse of covering selections, in-process; one result per query and window plus metrics."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.engine_adapter.covering_io import read_event_frame, write_covering_output
from cepplan.engine_adapter.covering_run import run_covering
from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
from cepplan.errors import InputError
from cepplan.planner.covering import SOLVERS


def cover_command(
    plan: Path = typer.Argument(..., help="The plan.json whose consumer queries to evaluate."),
    events: list[Path] = typer.Option(..., "--events", help="Event file(s) (repeatable)."),
    out: Path = typer.Option(..., "--out", help="Output directory, replaced on success."),
    workload: Path | None = typer.Option(None, "--workload", help="The workload.json "
                                         "(default: the one the plan names)."),
    solver: str | None = typer.Option(None, "--solver", help="Override the plan's covering "
                                      "solver: auto, cpsat, mqc, mnh, or none (no reuse)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Compute each consumer operator once per covering selection and deliver it to every
    query it serves; write OUT/results/*.jsonl and OUT/metrics.json and print the savings."""
    if solver is not None and solver not in (*SOLVERS, "none"):
        raise InputError.single("--solver", "", f"{solver!r} is not one of "
                                f"{', '.join(SOLVERS)}, none")
    chosen, loaded = plan_and_workload(plan, workload)
    if not chosen.covering:
        raise InputError.single(str(plan), "covering", "the plan has no consumer queries "
                                "(the workload declares no `consumers`)")
    frame = read_event_frame(event_paths(events), loaded)
    run = run_covering(frame, chosen.covering, solver=solver)
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
