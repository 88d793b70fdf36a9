"""`cepplan run plan.json --events PATH --out DIR`: evaluate the plan in-process or on Spark,
write matches and metrics, show the metrics."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import typer

from cepplan.cli.generate_cmd import _check_kind
from cepplan.engine_adapter.engine_choice import ENGINES, choose_engine
from cepplan.engine_adapter.generate import generate
from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.metrics_table import metrics_lines
from cepplan.errors import InputError


def run_command(
    plan: Path = typer.Argument(..., help="The plan.json to evaluate."),
    events: list[Path] = typer.Option(..., "--events", help="Event file(s) (repeatable)."),
    out: Path = typer.Option(..., "--out", help="Output directory, replaced on success."),
    engine: str = typer.Option("auto", "--engine", help="local (in-process), spark, or auto: "
                               "local unless --master is given or the input exceeds 2 GiB."),
    master: str | None = typer.Option(None, "--master", help="Spark master URL (implies "
                                      "--engine spark under auto; default local[*])."),
    workload: Path | None = typer.Option(None, "--workload", help="The workload.json "
                                         "(default: the one the plan names)."),
    plan_kind: str = typer.Option("plan", "--plan-kind", help="plan, or trivial for the "
                                  "unoptimised baseline on the same data."),
    output_format: str = typer.Option("jsonl", "--format", help="jsonl or parquet matches."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Evaluate the plan on the events; write matches and metrics.json into --out and print
    the metrics table."""
    _check_kind(plan_kind)
    if output_format not in ("jsonl", "parquet"):
        raise InputError.single("--format", "", f"must be jsonl or parquet, not "
                                f"{output_format!r}")
    if engine not in ENGINES:
        raise InputError.single("--engine", "", f"must be one of {', '.join(ENGINES)}, not "
                                f"{engine!r}")
    chosen, loaded = plan_and_workload(plan, workload, trivial=plan_kind == "trivial")
    files = event_paths(events)
    which = choose_engine(engine, master, files)
    if which == "local":
        _run_local(loaded, chosen, plan_kind, files, out, output_format, quiet)
    else:
        from cepplan.engine_adapter.submit import submit

        with tempfile.TemporaryDirectory(prefix="cepplan-job-") as scratch:
            job_dir = generate(loaded, chosen, Path(scratch) / "job", plan_kind=plan_kind)
            submit(job_dir, files, out, master=master or "local[*]",
                   output_format=output_format, quiet=quiet)
    if not quiet:
        metrics = json.loads((out / "metrics.json").read_text())
        typer.echo(f"engine: {which}")
        for line in metrics_lines(metrics, loaded.time_unit):
            typer.echo(line)
        typer.echo(f"matches and metrics.json written to {out}")


def _run_local(loaded, chosen, plan_kind: str, files: list[str], out: Path,
               output_format: str, quiet: bool) -> None:
    """The in-process engine; Ctrl-C and SIGTERM leave `out` as it was (exit 130 / 143)."""
    from cepplan.engine_adapter.local.engine import run_local_job
    from cepplan.engine_adapter.local.writer import Terminated, sigterm_unwinds

    data = job_data(loaded, chosen, plan_kind=plan_kind)
    say = (lambda _text: None) if quiet else (lambda text: typer.echo(text, err=True))
    try:
        with sigterm_unwinds():
            run_local_job(data, files, out, output_format=output_format, say=say)
    except KeyboardInterrupt:
        print(f"interrupted: {out} left as it was", file=sys.stderr)
        raise typer.Exit(130) from None
    except Terminated:
        print(f"terminated: {out} left as it was", file=sys.stderr)
        raise typer.Exit(143) from None
