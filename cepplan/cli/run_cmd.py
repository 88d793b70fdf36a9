"""`cepplan run plan.json --events PATH --out DIR`: generate the job, submit it, show metrics."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import typer

from cepplan.cli.generate_cmd import _check_kind
from cepplan.engine_adapter.generate import generate
from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
from cepplan.engine_adapter.metrics_table import metrics_lines
from cepplan.engine_adapter.submit import submit
from cepplan.errors import InputError


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
    verbose: bool = typer.Option(False, "--verbose", help="Show Spark's own log too."),
) -> None:
    """Evaluate the plan on the events with Spark; write matches and metrics.json into --out
    and print the metrics table."""
    _check_kind(plan_kind)
    if output_format not in ("jsonl", "parquet"):
        raise InputError.single("--format", "", f"must be jsonl or parquet, not "
                                f"{output_format!r}")
    chosen, loaded = plan_and_workload(plan, workload, trivial=plan_kind == "trivial")
    files = event_paths(events)
    with tempfile.TemporaryDirectory(prefix="cepplan-job-") as scratch:
        job_dir = generate(loaded, chosen, Path(scratch) / "job", plan_kind=plan_kind)
        submit(job_dir, files, out, master=master, output_format=output_format, quiet=quiet,
               verbose=verbose)
    if not quiet:
        metrics = json.loads((out / "metrics.json").read_text())
        for line in metrics_lines(metrics, loaded.time_unit):
            typer.echo(line)
        typer.echo(f"matches and metrics.json written to {out}")
