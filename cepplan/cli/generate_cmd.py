"""`cepplan generate plan.json -o DIR`: the plan's self-contained PySpark evaluation job."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.engine_adapter.generate import generate
from cepplan.engine_adapter.inputs import plan_and_workload
from cepplan.errors import InputError
from cepplan.limits import check_output_dir


def generate_command(
    plan: Path = typer.Argument(..., help="The plan.json to deploy."),
    out: Path = typer.Option(..., "-o", "--out", help="The job directory to write."),
    workload: Path | None = typer.Option(None, "--workload", help="The workload.json "
                                         "(default: the one the plan names)."),
    plan_kind: str = typer.Option("plan", "--plan-kind", help="plan (as given) or trivial "
                                  "(the unoptimised baseline for the same workload)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Write DIR/job.py, DIR/runtime.zip (for --py-files), DIR/job.json and DIR/plan.json."""
    _check_kind(plan_kind)
    check_output_dir(out, "--out")
    chosen, loaded = plan_and_workload(plan, workload, trivial=plan_kind == "trivial")
    generate(loaded, chosen, out, plan_kind=plan_kind)
    if not quiet:
        typer.echo(f"job written to {out}; run it with:\n  spark-submit --py-files "
                   f"{out / 'runtime.zip'} {out / 'job.py'} --events EVENTS --out RESULTS")


def _check_kind(kind: str) -> None:
    if kind not in ("plan", "trivial"):
        raise InputError.single("--plan-kind", "", f"must be plan or trivial, not {kind!r}")
