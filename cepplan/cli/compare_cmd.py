"""`cepplan compare WORKLOAD [--stats stats.json] -o report.html`: every planner side by side,
written as report.html with report.md and report.json beside it."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from cepplan.cli import options


def compare_command(
    workload: Path = typer.Argument(..., help="The workload.json to plan."),
    stats: Path | None = typer.Option(None, "--stats", help="A stats.json measured by "
                                      "`cepplan stats`; overrides inline statistics."),
    output: Path = options.output("The report page; report.md and report.json are written "
                                  "beside it.", Path("report.html")),
    time_limit: float = typer.Option(60.0, "--time-limit", min=0.001,
                                     help="Seconds each planner may search."),
    events: list[Path] = typer.Option([], "--events", help="Event files: run every plan (and "
                                      "the plans with and without contexts, sharing and "
                                      "covering) on them in-process and show measured beside "
                                      "predicted figures (repeatable)."),
    seed: int = options.seed("Seed of the randomised planners."),
    quiet: bool = options.quiet(),
) -> None:
    """Plan the workload with every planner that applies and compare them in a report.

    The report puts the planners side by side: modelled costs, latencies, Pareto fronts, the
    subtrees patterns share and by whom, and a workload's contexts and consumer-query covering
    with and without. With --events every plan and variant is also run, measured beside the
    predictions; different matches exit 1.
    """
    from cepplan.cli.optimize_cmd import MAX_TIME_LIMIT
    from cepplan.limits import bounded
    from cepplan.planner.compose import Settings
    from cepplan.planner.deadline import TimeLimitTooShort
    from cepplan.report.compare import compare
    from cepplan.report.measure import matches_equal
    from cepplan.report.write import report_paths, write_report
    from cepplan.stats.stats_file import read_stats
    from cepplan.workload import load_workload

    bounded("--time-limit", time_limit, low=0, high=MAX_TIME_LIMIT)
    report_paths(output)  # refuse a bad output before planning
    loaded = load_workload(workload)
    statistics = read_stats(stats, loaded) if stats else loaded.statistics
    say = (lambda _: None) if quiet or not sys.stderr.isatty() else (
        lambda text: print(text, file=sys.stderr))
    if events:
        from cepplan.engine_adapter.inputs import event_paths

        files = event_paths(events)
    try:
        comparison = compare(loaded, statistics, Settings(time_limit=time_limit, seed=seed),
                             stats_file=str(stats) if stats else None, progress=say)
    except TimeLimitTooShort as exc:
        raise options.option_error("--time-limit", exc.advice(time_limit)) from None
    report = comparison.report
    if events:
        from cepplan.report.measure import measure_plans

        report["measured"] = measure_plans(
            report, comparison.plans, loaded, files, say, shared=comparison.shared,
            independent=comparison.independent, covering=comparison.covering)
    paths = write_report(report, output)
    if not quiet:
        best = report["best"]
        trivial = report["planners"][0]["total_cost"]
        cost = next(p["total_cost"] for p in report["planners"] if p["name"] == best)
        typer.echo(f"best plan: {best}, {cost:.4g} {report['unit']} against {trivial:.4g} "
                   f"for the trivial plan")
        typer.echo("report written to " + ", ".join(str(p) for p in paths.values()))
    if events and not matches_equal(report["measured"]):
        print("error: the plans found different matches on these events; plans must change "
              "cost, never results: please report this as a bug", file=sys.stderr)
        raise typer.Exit(1)
