"""`cepplan optimize WORKLOAD [--stats stats.json] [-o plan.json]`: plan every pattern (seed
002 §3–§5), write `plan.json` atomically and print what the chosen plans save."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cepplan.cli import options
from cepplan.cli.options import Solver, Strategy

if TYPE_CHECKING:
    from cepplan.planner.optimize import Optimized
    from cepplan.workload import Workload


def optimize_command(
    workload: Path = typer.Argument(..., metavar="WORKLOAD", help="The workload.json to plan."),
    stats: Path | None = typer.Option(None, "--stats", help="A stats.json measured by "
                                      "`cepplan stats`; replaces the inline statistics."),
    output: Path = options.output("Where to write the plan.", Path("plan.json")),
    solver: Solver = options.choice(Solver.auto, "--solver", "auto: exact search up to "
                                    "--dp-limit events per pattern, heuristics above."),
    k: int = typer.Option(8, "-k", help="Plans each pattern offers the patterns built on it "
                          "(0: all)."),
    strategy: Strategy = options.choice(Strategy.mixture, "--strategy",
                                        "How those k plans are picked."),
    seed: int = options.seed("Seed of the random strategy."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds before an exact "
                                     "search falls back to the heuristics."),
    time_step: str | None = options.time_step("Time step of the Poisson model (default: the "
                                              "fine-grained limit)."),
    dp_limit: int = typer.Option(12, "--dp-limit", help="Largest pattern (in events) that "
                                 "auto searches exactly."),
    no_share: bool = typer.Option(False, "--no-share", help="Plan patterns that share a "
                                  "subevent independently."),
    quiet: bool = options.quiet(),
) -> None:
    """Choose each pattern's cheapest detection plan within its latency bound; write plan.json.

    Prints, per pattern, the chosen plan, its latency and expected cost against pushing every
    event, then the whole workload's saving.
    """
    from cepplan.planner.compose import Settings
    from cepplan.planner.optimize import optimize
    from cepplan.planner.plan import write_plan
    from cepplan.stats.stats_file import read_stats
    from cepplan.workload import load_workload

    loaded = load_workload(workload)
    statistics = read_stats(stats, loaded) if stats else loaded.statistics
    step = options.duration_value("--time-step", time_step, loaded.time_unit) \
        if time_step is not None else None
    settings = Settings(solver=solver.value, k=k or None, strategy=strategy.value, seed=seed,
                        time_limit=time_limit, step=step, dp_limit=dp_limit)
    result = optimize(loaded, statistics, settings, str(stats) if stats else None,
                      share=not no_share)
    write_plan(result.plan, output)
    if not quiet:
        for line in summary(result, loaded):
            typer.echo(line)
        typer.echo(f"plan written to {output}")


def summary(result: Optimized, workload: Workload) -> list[str]:
    """The table `cepplan optimize` prints: pattern, chosen plan, latency, costs, saving."""
    unit = workload.time_unit
    header = ("pattern", "chosen plan", "latency", f"cost/{unit}", f"naive/{unit}", "saving",
              "solver")
    rows = []
    for name, plan in result.plan.patterns.items():
        chosen = " -> ".join(",".join(sorted(step)) for step in plan.detection.steps)
        cost, naive = plan.detection.expected_cost, plan.naive_cost
        saving = f"{max(0.0, 100 * (1 - cost / naive)):.0f}%" if naive else "-"
        rows.append((name, chosen, str(plan.detection.latency), f"{cost:.4g}", f"{naive:.4g}",
                     saving, plan.solver))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]
    outcome = result.outcome
    saving = 1 - outcome.total / outcome.naive_total if outcome.naive_total else 0.0
    lines.append(f"workload: {outcome.total:.4g} events/{unit} expected, each event sent "
                 f"once across patterns; pushing everything: {outcome.naive_total:.4g} "
                 f"(saving {max(0.0, 100 * saving):.0f}%)")
    lines.append(f"independent plans, before sharing: {outcome.independent_total:.4g}; "
                 f"planned in {result.seconds:.2f} s")
    lines += [f"shared subevent {name}: sent once for {users}" for name, users
              in _shared_users(workload, outcome.shared)]
    return lines


def _shared_users(workload: Workload, shared: tuple[str, ...]) -> list[tuple[str, str]]:
    """Each shared subevent and the patterns its one evaluation serves."""
    from cepplan.workload.detection_graph import detection_graph

    graph = detection_graph(workload)
    users = []
    for name in shared:
        parents = sorted(graph.predecessors(name))
        users.append((name, f"{len(parents)} patterns ({', '.join(parents)})"))
    return users
