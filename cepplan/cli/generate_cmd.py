"""`cepplan generate PLAN -o DIR`: the plan's self-contained PySpark evaluation job."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.cli.options import PlanKind
from cepplan.terminal import echo, warn


def generate_command(
    plan: Path = typer.Argument(..., metavar="PLAN", help="The plan.json to deploy."),
    output: Path = options.output("The job directory to write."),
    workload: Path | None = options.workload_option(),
    plan_kind: PlanKind = options.choice(PlanKind.plan, "--plan-kind", "plan: as given; "
                                         "trivial: the unoptimised baseline of its workload."),
    streaming: bool = typer.Option(False, "--streaming", help="A Structured Streaming job "
                                   "that follows a directory or a socket (docs/engine.md)."),
    adaptive: bool = typer.Option(False, "--adaptive", help="With --streaming: the job "
                                  "measures the statistics as the stream goes, reports when "
                                  "they drift outside the ranges the plan holds for, and "
                                  "switches to a plan's job.json dropped in CHECKPOINT/plans/."),
    replan_horizon: str | None = options.duration(
        "--replan-horizon", None, "With --adaptive: how much event time the statistics are "
        "measured over (default: 100 times the largest window)."),
    quiet: bool = options.quiet(),
) -> None:
    """Write the plan's PySpark job, to run with spark-submit anywhere, without cepplan.

    The -o directory holds job.py, runtime.zip (for --py-files), job.json and plan.json.
    """
    from cepplan.engine_adapter.inputs import plan_and_workload
    from cepplan.engine_adapter.spark.generate import generate
    from cepplan.outputs import check_directory_output, written_directory

    for flag, given, needs in (("--adaptive", adaptive and not streaming, "--streaming"),
                               ("--replan-horizon", replan_horizon and not adaptive,
                                "--adaptive")):
        if given:
            raise typer.BadParameter(f"give it with {needs}", param_hint=flag)
    trivial = plan_kind is PlanKind.trivial
    chosen, loaded = plan_and_workload(plan, workload, trivial=trivial, warn=warn)
    target = check_directory_output(output, "generate", [("plan", plan),
                                                         ("workload", loaded.path)])
    if streaming:
        from cepplan.engine_adapter.job_spec import job_data
        from cepplan.engine_adapter.local.follow import check_streamable

        data = job_data(loaded, chosen, plan_kind=plan_kind.value)
        check_streamable(data, str(plan))
    section = None
    if adaptive:
        from cepplan.adaptive.drift_check import job_section
        from cepplan.cli.follow_run import replan_horizon_value

        section = job_section(loaded, chosen.invariants,
                              replan_horizon_value(loaded, replan_horizon), warn)
    with written_directory(target) as staged:
        generate(loaded, chosen, staged, plan_kind=plan_kind.value, streaming=streaming,
                 adaptive=section)
    if quiet:
        return
    if streaming:
        echo(f"job written to {output}; run it with:\n  spark-submit --py-files "
             f"{output / 'runtime.zip'} {output / 'job.py'} --follow DIR --out RESULTS "
             "--checkpoint CHECKPOINT")
    else:
        echo(f"job written to {output}; run it with:\n  spark-submit --py-files "
             f"{output / 'runtime.zip'} {output / 'job.py'} --events EVENTS --out RESULTS")
