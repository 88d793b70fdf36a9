"""`cepplan run PLAN EVENTS... -o DIR`: generate the job, submit it, show its metrics."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.cli.options import MatchFormat, PlanKind


def run_command(
    plan: Path = typer.Argument(..., metavar="PLAN", help="The plan.json to evaluate."),
    events: list[Path] = typer.Argument(..., metavar="EVENTS...", help="Event files."),
    output: Path = options.output("Output directory, replaced on success."),
    master: str = options.master(),
    workload: Path | None = options.workload_option(),
    plan_kind: PlanKind = options.choice(PlanKind.plan, "--plan-kind", "plan: as given; "
                                         "trivial: the unoptimised baseline, on the same "
                                         "data."),
    output_format: MatchFormat = options.choice(MatchFormat.jsonl, "--format",
                                                "How the matches are written."),
    quiet: bool = options.quiet(),
    verbose: bool = options.verbose(),
) -> None:
    """Evaluate the plan on the events with Spark; write matches and metrics.json."""
    from cepplan.engine_adapter.generate import generate
    from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
    from cepplan.engine_adapter.metrics_table import metrics_lines
    from cepplan.engine_adapter.submit import submit
    from cepplan.interrupt import scratch_directory, staged_directory
    from cepplan.limits import check_output_dir

    check_output_dir(output, "--output")
    trivial = plan_kind is PlanKind.trivial
    chosen, loaded = plan_and_workload(plan, workload, trivial=trivial)
    files = event_paths(events)
    progress = verbose or (sys.stderr.isatty() and not quiet)
    with (scratch_directory() as scratch,
          staged_directory(output) as staged):  # renamed over --output only on success
        job_dir = generate(loaded, chosen, scratch / "job", plan_kind=plan_kind.value)
        if progress:
            print(f"cepplan: running the job on Spark ({master})", file=sys.stderr, flush=True)
        submit(job_dir, files, staged, master=master, output_format=output_format.value,
               quiet=not progress, verbose=verbose)
    if not quiet:
        metrics = json.loads((output / "metrics.json").read_text())
        for line in metrics_lines(metrics, loaded.time_unit):
            typer.echo(line)
        typer.echo(f"matches and metrics.json written to {output}")
