"""`cepplan run plan.json --events PATH --out DIR`: generate the job, submit it, show metrics."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from cepplan.cli.generate_cmd import _check_kind
from cepplan.engine_adapter.generate import generate
from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
from cepplan.engine_adapter.metrics_table import metrics_lines
from cepplan.engine_adapter.submit import submit
from cepplan.errors import InputError
from cepplan.interrupt import scratch_directory, staged_directory
from cepplan.limits import check_output_dir


def run_command(
    plan: Path = typer.Argument(..., help="The plan.json to evaluate."),
    events: list[Path] = typer.Option(..., "--events", help="Event file(s) (repeatable)."),
    out: Path = typer.Option(..., "--out", help="Output directory, replaced on success."),
    master: str = typer.Option("local[*]", "--master", help="Spark master URL."),
    workload: Path | None = typer.Option(None, "--workload", help="The workload.json "
                                         "(default: the one the plan names)."),
    plan_kind: str = typer.Option("plan", "--plan-kind", help="plan, or trivial for the "
                                  "unoptimised baseline on the same data."),
    output_format: str = typer.Option("jsonl", "--format", help="jsonl or parquet matches."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Evaluate the plan on the events with Spark; write matches and metrics.json into --out
    and print the metrics table."""
    _check_kind(plan_kind)
    check_output_dir(out, "--out")
    if output_format not in ("jsonl", "parquet"):
        raise InputError.single("--format", "", f"must be jsonl or parquet, not "
                                f"{output_format!r}")
    chosen, loaded = plan_and_workload(plan, workload, trivial=plan_kind == "trivial")
    files = event_paths(events)
    with (scratch_directory() as scratch,
          staged_directory(out) as staged):  # renamed over --out only if the job succeeds
        job_dir = generate(loaded, chosen, scratch / "job", plan_kind=plan_kind)
        submit(job_dir, files, staged, master=master, output_format=output_format, quiet=quiet)
    if not quiet:
        metrics = json.loads((out / "metrics.json").read_text())
        for line in metrics_lines(metrics, loaded.time_unit):
            typer.echo(line)
        typer.echo(f"matches and metrics.json written to {out}")
