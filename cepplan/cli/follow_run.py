"""`cepplan run PLAN --follow SOURCE -o DIR`: the plan on a live stream, in-process or on
Spark; the options a stream cannot take are refused, the output directory must be new or
empty (unless a checkpoint continues it)."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

from cepplan.cli.options import Engine, MatchFormat, PlanKind
from cepplan.errors import InputError
from cepplan.fileio import write_bytes_atomic
from cepplan.terminal import echo, warn

SHARE_VARIABLE = "CEPPLAN_STATISTICS_SHARE"


def run_follow(plan: Path, events: list[str], output: Path, follow: str, trigger: float,
               engine: Engine, workload: Path | None, plan_kind: PlanKind,
               output_format: MatchFormat, quiet: bool, checkpoint: Path | None,
               master: str | None = None, verbose: bool = False, adaptive: bool = False,
               replan_horizon: str | None = None) -> None:
    """Follow the stream until it ends or is stopped, in-process or on Spark (`engine`, or
    `master` given); print the figures at the end. With a checkpoint that holds a killed
    run's state, continue that run. With `adaptive` (in-process), re-plan and switch plans
    when the statistics drift."""
    from cepplan.engine_adapter.inputs import plan_and_workload
    from cepplan.engine_adapter.job_spec import job_data
    from cepplan.engine_adapter.local.checkpoint import FILE as CHECKPOINT_FILE
    from cepplan.engine_adapter.local.follow import (
        check_streamable,
        follow_stream,
    )
    from cepplan.engine_adapter.metrics_table import metrics_lines, run_warnings
    from cepplan.sources.time_text import time_writer

    on_spark = engine is Engine.spark or (engine is Engine.auto and master is not None)
    if on_spark:  # pyspark only imported for it
        from cepplan.engine_adapter.spark.follow import follow_on_spark
        from cepplan.engine_adapter.spark.stream_job import IDENTITY
    if events:
        raise InputError.single(events[0], "", "give event files or --follow SOURCE, not both")
    if output_format is not MatchFormat.jsonl and on_spark:
        raise InputError.single("--format", "", "a stream on Spark writes matches as JSON "
                                "lines; Parquet parts are the in-process stream's")
    if checkpoint is not None and (follow == "-" or follow.startswith("tcp://")):
        raise InputError.single("--checkpoint", "", "a restart can continue a directory "
                                "stream only: lines from standard input or TCP are gone "
                                "once read")
    if replan_horizon is not None and not adaptive:
        raise InputError.single("--replan-horizon", "", "give it with --adaptive")
    if adaptive and checkpoint is not None and not on_spark:
        raise InputError.single("--adaptive", "", "a checkpoint restarts the plan it recorded: "
                                "an adaptive stream runs without --checkpoint")
    if checkpoint is not None:
        _check_checkpoint_place(checkpoint, follow, output)
    recorded = checkpoint / (IDENTITY if on_spark else CHECKPOINT_FILE) if checkpoint else None
    if recorded is None or not recorded.exists():
        _check_new_directory(output, follow)  # else the checkpoint says which output it is
    chosen, loaded = plan_and_workload(plan, workload, trivial=plan_kind is PlanKind.trivial,
                                       warn=warn)
    if output_format is MatchFormat.parquet:
        from cepplan.engine_adapter.job_spec import check_parquet_output

        check_parquet_output(loaded, chosen)
    data = job_data(loaded, chosen, plan_kind=plan_kind.value)
    check_streamable(data, str(plan))  # before --output is made
    bounds = {p.name: {"max_steps": p.latency.max_steps, "max_time": p.latency.max_time,
                       "plan_steps": len(chosen.patterns[p.name].detection.steps)}
              for p in loaded.patterns if p.latency is not None}
    adaptation = section = None
    if adaptive:
        horizon = replan_horizon_value(loaded, replan_horizon)
        if on_spark:
            from cepplan.adaptive.drift_check import job_section

            section = job_section(loaded, chosen.invariants, horizon, warn)
        else:
            from cepplan.adaptive.adaptation import Adaptation

            adaptation = Adaptation(loaded, chosen, horizon, warn=warn,
                                    share=_statistics_share(), out=output)
    output.mkdir(parents=True, exist_ok=True)
    if on_spark:
        metrics = follow_on_spark(loaded, chosen, data, str(plan), follow, output, checkpoint,
                                  trigger=trigger, master=master or "local[*]", quiet=quiet,
                                  verbose=verbose, adaptive=section, warn=warn)
        metrics["stream"]["latency_bound"] = bounds
        write_bytes_atomic(output / "metrics.json", json.dumps(metrics, indent=2).encode())
    else:
        metrics = follow_stream(data, follow, output, str(plan), trigger=trigger,
                                progress=not quiet, bounds=bounds, warn=warn,
                                checkpoint=checkpoint, adaptation=adaptation,
                                output_format=output_format.value)
    when = time_writer(loaded.source and loaded.source.time_format, loaded.time_unit)
    for line in run_warnings(metrics, loaded.options.kleene_cap, when):
        echo(line, err=True, lines=False)
    stream = metrics["stream"]
    late = sum(stream["late_events"].values())
    if late:
        aside = output / ("output=late-events" if on_spark else "late-events.jsonl")
        warn(f"{late} late event(s) (more than max_delay behind the latest) written to "
             f"{aside}, not matched")
    if not quiet:
        echo(f"engine: {metrics['engine']} (stream)")
        for line in metrics_lines(metrics, loaded.time_unit):
            echo(line, lines=False)
        for name, figures in stream["detection_latency_seconds"].items():
            echo(f"detection latency {name}: p50 {figures['p50']:.3f}s, p99 "
                 f"{figures['p99']:.3f}s, max {figures['max']:.3f}s", lines=False)
        for line in switch_lines(stream, when):
            echo(line, lines=False)
        echo(f"matches and metrics.json written to {output}")
    sys.stdout.flush()


def replan_horizon_value(loaded, text: str | None) -> float:
    """`--replan-horizon`'s value in the workload's time unit (default: 100 times the largest
    window); not positive: an error."""
    from cepplan.adaptive.online_stats import default_horizon
    from cepplan.cli.options import duration_value

    horizon = (default_horizon(loaded) if text is None else
               duration_value("--replan-horizon", text, loaded.time_unit))
    if not horizon > 0:
        raise InputError.single("--replan-horizon", "", f"must be positive, got {text}")
    return horizon


def _check_new_directory(output: Path, follow: str) -> None:
    """A stream appends to its output as it goes: `output` must be new or an empty
    directory, and not the followed directory."""
    if output.exists() and not output.is_dir():
        raise InputError.single(str(output), "", "is a file; --output needs a directory")
    if output.is_dir() and any(output.iterdir()):
        raise InputError.single(str(output), "", "is not empty: a stream appends its matches "
                                "to a new or empty directory")
    if follow != "-" and os.path.realpath(follow) == os.path.realpath(output):
        raise InputError.single(str(output), "", "is the followed directory")


def _check_checkpoint_place(checkpoint: Path, follow: str, output: Path) -> None:
    """The checkpoint directory is neither the followed directory (its file would be read as
    events) nor the output (which holds only what the stream writes)."""
    for place, what in ((follow, "the followed directory"), (output, "the output directory")):
        if os.path.realpath(checkpoint) == os.path.realpath(place):
            raise InputError.single("--checkpoint", "", f"{checkpoint} is {what}; give a "
                                    "directory of its own")


def _statistics_share() -> float:
    """`CEPPLAN_STATISTICS_SHARE`: of the run's time, the most the online statistics may take
    (0 < share <= 1; default 0.02)."""
    from cepplan.adaptive.adaptation import STATISTICS_SHARE

    text = os.environ.get(SHARE_VARIABLE)
    if text is None:
        return STATISTICS_SHARE
    try:
        share = float(text)
    except ValueError:
        share = math.nan
    if not 0 < share <= 1:
        raise InputError.single(SHARE_VARIABLE, "", f"expected a share of the run's time "
                                f"above 0 and at most 1, got {text!r:.40}")
    return share


def switch_lines(stream: dict, time_text: Callable[[float], str]) -> list[str]:
    """The end-of-run lines of an adaptive stream: each re-plan, when (its watermark as
    `time_text` writes times), why, what changed, the modelled gain and the throughput
    measured before and after (in-process)."""
    if not stream.get("adaptive"):
        return []
    lines = []
    for record in stream["replans"]:
        lines.append(f"re-planned at micro-batch {record['micro_batch']} (watermark "
                     f"{time_text(record['watermark'])})"
                     f"{_took(record.get('replan_seconds'))}: {'; '.join(record['reason'])}")
        what = "; ".join(record["changes"]) if record["changes"] else "the plan stayed the same"
        measured = f"; throughput {_rate(record['throughput_before'])} -> " \
            f"{_rate(record['throughput_after'])} events/s" if "throughput_before" in record \
            else ""
        lines.append(f"  {what}; modelled gain {record['modelled_gain']:.2f}x{measured}")
        if record.get("plan_file") and not record["switched"]:
            lines.append(f"  the stream ended before it took over; the plan to restart with: "
                         f"{record['plan_file']} in the output directory")
        elif record.get("plan_file"):
            lines.append(f"  the new plan: {record['plan_file']} in the output directory")
    if not stream["replans"]:
        lines.append("no re-plan: the statistics stayed within the plan's ranges")
    return lines


def _took(seconds: float | None) -> str:
    return "" if seconds is None else f" in {seconds:.2f}s"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
