"""`cepplan optimize WORKLOAD [--stats stats.json] [-o plan.json]`: plan every pattern (seed
002 §3–§5), write `plan.json` atomically and print what the chosen plans save."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.errors import InputError, Problem
from cepplan.planner.compose import AUTO, Settings
from cepplan.planner.evaluation import SEARCHES, EvaluationSettings
from cepplan.planner.front import DP, HEURISTIC
from cepplan.planner.optimize import Optimized, optimize
from cepplan.planner.plan import write_plan
from cepplan.planner.strategies import STRATEGIES
from cepplan.search.neighbourhood import parse_neighbourhood
from cepplan.stats.stats_file import read_stats
from cepplan.workload import load_workload

SOLVERS = (AUTO, DP, HEURISTIC)


def optimize_command(
    workload: Path = typer.Argument(..., help="The workload.json to plan."),
    stats: Path | None = typer.Option(None, "--stats", help="A stats.json measured by "
                                      "`cepplan stats`; overrides inline statistics."),
    out: Path = typer.Option(Path("plan.json"), "-o", "--out", help="Where to write the plan."),
    solver: str = typer.Option(AUTO, "--solver", help="auto (DP up to --dp-limit subevents, "
                               "heuristics above), dp or heuristic."),
    k: int = typer.Option(8, "--k", help="Plans each pattern offers its parents (0 = all)."),
    strategy: str = typer.Option("mixture", "--strategy", help=f"How the k plans are picked: "
                                 f"{', '.join(STRATEGIES)}."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random strategy."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds before a DP falls "
                                     "back to the heuristics, and the longest the evaluation "
                                     "search may run (it stops earlier when it stops "
                                     "improving)."),
    time_step: float | None = typer.Option(None, "--time-step", help="Poisson time step in "
                                           "time units (default: the fine-grained limit)."),
    dp_limit: int = typer.Option(12, "--dp-limit", help="Largest pattern `auto` gives the DP."),
    no_share: bool = typer.Option(False, "--no-share", help="Skip the shared-subevent "
                                  "optimisation (Algorithm 2)."),
    search: str = typer.Option("tabu", "--search", help="How patterns' evaluation trees are "
                               "chosen and shared: tabu (tabu search), sa (simulated "
                               "annealing), sh (share the largest common parts), re (each "
                               "pattern's cheapest tree) or none."),
    neighborhood: str = typer.Option("edge", "--neighborhood", help="Moves of the search: "
                                     "edge (two patterns at a time) or vertex:K (up to K)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Find each pattern's Pareto-optimal detection plans and pick the cheapest within its
    latency bound; write plan.json and print a summary table."""
    _check_choice("--solver", solver, SOLVERS)
    _check_choice("--strategy", strategy, STRATEGIES)
    _check_choice("--search", search, SEARCHES)
    _check_evaluation(neighborhood, time_limit)
    loaded = load_workload(workload)
    statistics = read_stats(stats, loaded) if stats else loaded.statistics
    settings = Settings(solver=solver, k=k or None, strategy=strategy, seed=seed,
                        time_limit=time_limit, step=time_step, dp_limit=dp_limit)
    result = optimize(loaded, statistics, settings, str(stats) if stats else None,
                      share=not no_share, evaluation_settings=EvaluationSettings(
                          search, neighborhood, time_limit, seed))
    write_plan(result.plan, out)
    if not quiet:
        for line in summary(result, loaded.time_unit):
            typer.echo(line)
        typer.echo(f"plan written to {out}")


def summary(result: Optimized, time_unit: str) -> list[str]:
    """The table `cepplan optimize` prints: pattern, chosen plan, latency, costs, saving."""
    header = ("pattern", "chosen plan", "latency", f"cost/{time_unit}", f"naive/{time_unit}",
              "saving", "solver")
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
    lines.append(f"workload: {outcome.total:.4g} events/{time_unit} expected, each event sent "
                 f"once across patterns; pushing everything: {outcome.naive_total:.4g} "
                 f"(saving {max(0.0, 100 * saving):.0f}%)")
    lines.append(f"independent plans, before sharing: {outcome.independent_total:.4g}; "
                 f"planned in {result.seconds:.2f} s")
    if outcome.shared:
        lines.append(f"shared subevents (Algorithm 2): {', '.join(outcome.shared)}")
    sharing = result.plan.sharing
    if sharing is not None:
        lines += sharing_summary(sharing)
    return lines


def sharing_summary(sharing: dict) -> list[str]:
    """What the evaluation plan saves: partial matches vs each pattern in its own order."""
    cost = sharing["modelled_cost"]
    users = {name for s in sharing["shared"] for name in s["users"]}
    chosen = cost["chosen"]
    lines = [f"evaluation plan: {len(sharing['shared'])} subtree(s) computed once for "
             f"{len(users)} pattern(s); expected partial matches {chosen:.4g} vs "
             f"{cost['trivial']:.4g} evaluating each pattern alone in its own order"
             f" ({cost['trivial'] / chosen if chosen else 1:.1f}x fewer), {cost['sh']:.4g} "
             f"sharing only, {cost['re']:.4g} reordering only"]
    if "note" in sharing:
        lines.append(sharing["note"])
    for name, reason in sharing["unplanned"].items():
        lines.append(f"{name}: kept in its own order ({reason})")
    return lines


def _check_evaluation(neighborhood: str, time_limit: float) -> None:
    try:
        parse_neighbourhood(neighborhood)
    except ValueError as exc:
        raise InputError([Problem("<command line>", "--neighborhood", str(exc))]) from exc
    if not time_limit > 0:
        raise InputError([Problem("<command line>", "--time-limit",
                                  f"must be more than 0 seconds, got {time_limit}")])


def _check_choice(flag: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InputError([Problem("<command line>", flag,
                                  f"{value!r} is not one of {', '.join(allowed)}")])
