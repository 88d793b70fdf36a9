"""`cepplan compare WORKLOAD [EVENTS...] [--stats stats.json] [-o report.html]`: every planner
side by side, written as report.html with report.md and report.json beside it; with event
files, every plan also run on them in-process."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.terminal import echo


def compare_command(
    workload: Path = typer.Argument(..., metavar="WORKLOAD", help="The workload.json to plan."),
    events: list[str] | None = options.events_argument(required=False),
    stats: Path | None = typer.Option(None, "--stats", help="A stats.json measured by "
                                      "`cepplan stats`; overrides inline statistics."),
    output: Path = options.output("The report page; report.md and report.json are written "
                                  "beside it.", Path("report.html")),
    stream_metrics: Path | None = typer.Option(None, "--stream-metrics", metavar="METRICS",
                                               help="The metrics.json of a `cepplan run "
                                               "--follow` run: its detection latency per "
                                               "pattern is shown beside the latency bounds."),
    time_limit: float = typer.Option(60.0, "--time-limit", min=0.001,
                                     help="Seconds each planner may search."),
    seed: int = options.seed("Seed of the randomised planners."),
    quiet: bool = options.quiet(),
) -> None:
    """Plan the workload with every planner that applies and compare them in a report.

    The report puts the planners side by side: modelled costs, latencies, Pareto fronts, the
    subtrees patterns share and by whom, and a workload's contexts and consumer-query covering
    with and without. Given EVENTS, every plan (and the plans with and without contexts,
    sharing and covering) is also run on them in-process and measured beside the predictions;
    if two plans find different matches, the command exits 1. Given --stream-metrics, the
    detection latency a live stream measured is shown beside the patterns' latency bounds.
    """
    from cepplan.cli.optimize_cmd import MAX_TIME_LIMIT
    from cepplan.limits import bounded
    from cepplan.outputs import check_file_outputs, event_inputs
    from cepplan.planner.compose import Settings
    from cepplan.planner.deadline import TimeLimitTooShort
    from cepplan.report.compare import compare
    from cepplan.report.measure import matches_equal
    from cepplan.report.stream_latency import read_stream_metrics
    from cepplan.report.write import report_paths, write_report
    from cepplan.stats.stats_file import read_stats
    from cepplan.workload import load_workload

    bounded("--time-limit", time_limit, low=0, high=MAX_TIME_LIMIT)
    events = events or []
    inputs = [("workload", workload), *([("statistics", stats)] if stats else []),
              *([("stream metrics", stream_metrics)] if stream_metrics else []),
              *event_inputs(events)]
    check_file_outputs(list(report_paths(output).values()), inputs)  # before planning
    loaded = load_workload(workload)
    statistics = read_stats(stats, loaded) if stats else loaded.statistics
    names = [p.name for p in loaded.patterns]
    stream = read_stream_metrics(stream_metrics, names) if stream_metrics else None
    say = (lambda _: None) if quiet or not sys.stderr.isatty() else (
        lambda text: echo(text, err=True))
    if events:
        from cepplan.engine_adapter.inputs import event_paths

        files = event_paths(events)
    try:
        comparison = compare(loaded, statistics, Settings(time_limit=time_limit, seed=seed),
                             stats_file=str(stats) if stats else None, progress=say)
    except TimeLimitTooShort as exc:
        raise options.option_error("--time-limit", exc.advice(time_limit)) from None
    report = comparison.report
    if stream:
        report["stream"] = stream
    if events:
        from cepplan.report.measure import measure_plans
        from cepplan.report.summary import summarize
        from cepplan.stats.rejected_rows import check_rejected

        report["measured"] = measure_plans(
            report, comparison.plans, loaded, files, say, shared=comparison.shared,
            independent=comparison.independent, covering=comparison.covering,
            warn=lambda text: echo(text, err=True, lines=False))
        warning = check_rejected(", ".join(files), report["measured"]["rows_read"],
                                 report["measured"]["rows_rejected"], files, loaded)
        if warning:  # an error instead, before the report is written, when no row is usable
            echo(warning, err=True, lines=False)
        report["summary"] = summarize(report)  # with what was measured
    paths = write_report(report, output)
    if not quiet:
        for line in best_plan_lines(report):
            echo(line)
        echo("report written to " + ", ".join(str(p) for p in paths.values()))
    if events and not matches_equal(report["measured"]):
        echo("error: the plans found different matches on these events; plans must change "
              "cost, never results: please report this as a bug", err=True)
        raise typer.Exit(1)


def best_plan_lines(report: dict) -> list[str]:
    """What the best plans save against the trivial one: events sent (acquisition) and
    partial matches (evaluation: sharing and reordering), each in its own unit."""
    from cepplan.cli.optimize_cmd import fewer

    trivial = report["planners"][0]["total_cost"]
    best = min(report["planners"][1:] or report["planners"], key=lambda p: p["total_cost"])
    if best["total_cost"] < trivial:
        lines = [f"acquisition: best plan {best['name']}, {best['total_cost']:.4g} "
                 f"{report['unit']} against {trivial:.4g} for the trivial plan "
                 f"({100 * (1 - best['total_cost'] / trivial):.0f} % fewer)"]
    else:
        lines = [f"acquisition: {trivial:.4g} {report['unit']}, as for the trivial plan: "
                 "sending every event at once is already the cheapest"]
    evaluation = report.get("evaluation")
    if evaluation:
        base = evaluation["planners"][0]["cost"]
        chosen = min(evaluation["planners"], key=lambda p: p["cost"])
        if chosen["cost"] < base:
            lines.append(f"evaluation: best plan {chosen['name']}, {chosen['cost']:.4g} "
                         f"{evaluation['unit']} against {base:.4g} for the trivial plan"
                         f"{fewer(base, chosen['cost'])}")
        else:
            lines.append(f"evaluation: {base:.4g} {evaluation['unit']}, as for the trivial "
                         "plan: neither sharing nor reordering saves")
    return lines
