"""`cepplan run PLAN EVENTS... -o DIR`: evaluate the plan in-process or on Spark, write
matches and metrics, show the metrics."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.cli.options import Engine, MatchFormat, PlanKind
from cepplan.terminal import echo, warn


def run_command(
    plan: Path = typer.Argument(..., metavar="PLAN", help="The plan.json to evaluate."),
    events: list[str] = options.events_argument(required=False),
    output: Path = options.output("Output directory, replaced on success."),
    engine: Engine = options.choice(Engine.auto, "--engine", "local (in-process), spark, or "
                                    "auto: local unless --master is given or the input is "
                                    "larger than 2 GiB."),
    master: str | None = options.master(),
    driver_memory: str = options.driver_memory(),
    workload: Path | None = options.workload_option(),
    plan_kind: PlanKind = options.choice(PlanKind.plan, "--plan-kind", "plan: as given; "
                                         "trivial: the unoptimised baseline, on the same "
                                         "data."),
    output_format: MatchFormat = options.choice(MatchFormat.jsonl, "--format",
                                                "How the matches are written: JSON lines, "
                                                "or Parquet with typed columns, a directory "
                                                "per pattern."),
    workers: int = options.workers(),
    follow: str | None = typer.Option(None, "--follow", metavar="SOURCE", help="Run on a live "
                                      "stream instead of EVENTS: a directory whose new files "
                                      "are read in name order, '-' (standard input) or "
                                      "tcp://HOST:PORT (lines from a server)."),
    trigger: float = typer.Option(1.0, "--trigger", metavar="SECONDS", min=0.01, max=3600,
                                  help="With --follow: the micro-batch interval."),
    checkpoint: Path | None = typer.Option(None, "--checkpoint", metavar="DIR",
                                           help="With --follow DIR: record the stream's "
                                           "state here per micro-batch; a restart with the "
                                           "same arguments continues after any kill."),
    adaptive: bool = typer.Option(False, "--adaptive", help="With --follow: measure the "
                                  "statistics as the stream goes and re-plan, switching "
                                  "plans at the watermark, when they drift outside the "
                                  "ranges the plan holds for (on Spark: report the drift "
                                  "and the plan to restart with)."),
    replan_horizon: str | None = options.duration(
        "--replan-horizon", None, "With --adaptive: how much event time the statistics are "
        "measured over (default: 100 times the largest window)."),
    quiet: bool = options.quiet(),
    verbose: bool = options.verbose(),
) -> None:
    """Evaluate the plan on the events; write matches and metrics.json. With --follow, on a
    live stream: matches appended as they are emitted (docs/engine.md, "Live streams")."""
    if follow is not None:
        from cepplan.cli.follow_run import run_follow

        run_follow(plan, events, output, follow, trigger, engine, workload, plan_kind,
                   output_format, quiet, checkpoint, master, verbose, adaptive,
                   replan_horizon)
        return
    for flag, given in (("--adaptive", adaptive), ("--replan-horizon", replan_horizon)):
        if given:
            raise typer.BadParameter("re-planning follows a live stream: use it with "
                                     "--follow SOURCE", param_hint=flag)
    if checkpoint is not None:
        raise typer.BadParameter("a checkpoint continues a stream: use it with --follow DIR",
                                 param_hint="--checkpoint")
    if not events:
        raise typer.BadParameter("give the event files (or --follow SOURCE)",
                                 param_hint="EVENTS")
    from cepplan.engine_adapter.engine_choice import choose_engine
    from cepplan.engine_adapter.inputs import event_paths, plan_and_workload
    from cepplan.engine_adapter.metrics_table import metrics_lines, run_warnings
    from cepplan.outputs import check_directory_output, event_inputs, written_directory
    from cepplan.sources.time_text import time_writer
    from cepplan.stats.rejected_rows import check_rejected

    trivial = plan_kind is PlanKind.trivial
    chosen, loaded = plan_and_workload(plan, workload, trivial=trivial, warn=warn)
    files = event_paths(events)
    target = check_directory_output(output, "run", [("plan", plan), ("workload", loaded.path),
                                                    *event_inputs(files)])
    if output_format is MatchFormat.parquet:
        from cepplan.engine_adapter.job_spec import check_parquet_output

        check_parquet_output(loaded, chosen)
    which = choose_engine(engine.value, master, files)
    progress = verbose or (sys.stderr.isatty() and not quiet)
    with written_directory(target) as staged:  # renamed over --output only on success
        if which == "local":
            _run_local(loaded, chosen, plan_kind.value, files, staged,
                       output_format.value, progress, workers)
        else:
            _run_spark(loaded, chosen, plan_kind.value, files, staged, output_format.value,
                       master or "local[*]", driver_memory, progress, verbose)
        metrics = json.loads((staged / "metrics.json").read_text())
        warning = check_rejected(", ".join(files), metrics["rows_read"],
                                 metrics["rows_rejected"], files, loaded)
    if warning:  # an error instead, before the output is replaced, when no row is usable
        echo(warning, err=True, lines=False)
    for line in run_warnings(metrics, loaded.options.kleene_cap,
                             time_writer(loaded.source and loaded.source.time_format,
                                         loaded.time_unit)):
        echo(line, err=True, lines=False)
    if not quiet:
        echo(f"engine: {which}")
        for line in metrics_lines(metrics, loaded.time_unit):
            echo(line, lines=False)
        results = ", consumer query results" if "covering" in metrics else ""
        echo(f"matches{results} and metrics.json written to {output}")


def _run_local(loaded, chosen, plan_kind: str, files: list[str], out: Path,
               output_format: str, progress: bool, workers: int) -> None:
    """The in-process engine (pyarrow, NumPy; no JVM), on `workers` processes."""
    from cepplan.engine_adapter.job_spec import job_data
    from cepplan.engine_adapter.local.engine import run_local_job

    data = job_data(loaded, chosen, plan_kind=plan_kind)
    say = (lambda text: echo(text, err=True)) if progress else (lambda _text: None)
    run_local_job(data, files, out, output_format=output_format, covering=chosen.covering,
                  say=say, workers=workers)


def _run_spark(loaded, chosen, plan_kind: str, files: list[str], out: Path,
               output_format: str, master: str, driver_memory: str, progress: bool,
               verbose: bool) -> None:
    """The generated PySpark job, submitted with spark-submit (its process group is stopped
    whole if cepplan is interrupted); it runs the plan's contexts and consumer queries too."""
    from cepplan.engine_adapter.spark.generate import generate
    from cepplan.engine_adapter.spark.submit import submit
    from cepplan.interrupt import scratch_directory

    with scratch_directory() as scratch:
        job_dir = generate(loaded, chosen, scratch / "job", plan_kind=plan_kind)
        if progress:
            echo(f"cepplan: running the job on Spark ({master})", err=True)
        submit(job_dir, files, out, master=master, output_format=output_format,
               quiet=not progress, verbose=verbose,
               conf={"spark.driver.memory": driver_memory})
