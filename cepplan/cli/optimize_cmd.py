"""`cepplan optimize WORKLOAD [--stats stats.json] [-o plan.json]`: plan every pattern (seed
002 §3–§5), write `plan.json` atomically and print what the chosen plans save."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cepplan.cli import options
from cepplan.cli.clock import command_started
from cepplan.cli.options import CoveringSolver, Engine, Search, Sharing, Solver, Strategy
from cepplan.terminal import echo

MAX_TIME_LIMIT = 86_400.0  # seconds
MAX_DP = 30  # subevents; the DP itself also falls back when its tables would not fit
# writing a plan and its summary took 6-45 % of reading the workload (300 consumer queries;
# 1,200 patterns): planning leaves half the reading time for it
WRITING_SHARE = 0.5
# planning aims this share of the limit early: what the process cannot control (waiting for a
# core on a busy machine, a pass finishing its step, exiting) took up to 12 % over a 6 s limit
# with 8 busy processes on 2 cores when planning aimed at the limit itself
FINISH_MARGIN = 0.05

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
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds the whole command "
                                     "may take, reading and writing included; each search "
                                     "returns its best plan so far when its share runs out."),
    time_step: str | None = options.time_step("Time step of the Poisson model (default: the "
                                              "fine-grained limit)."),
    dp_limit: int = typer.Option(12, "--dp-limit", help="Largest pattern (in events) that "
                                 "auto searches exactly."),
    no_share: bool = typer.Option(False, "--no-share", help="Plan patterns that share a "
                                  "subevent independently."),
    search: Search = options.choice(Search.tabu, "--search", "How patterns' evaluation trees "
                                    "are chosen and shared: tabu search, simulated annealing "
                                    "(sa), sharing the largest common parts (sh), each "
                                    "pattern's cheapest tree (re), or none."),
    neighborhood: str = typer.Option("edge", "--neighborhood", metavar="edge|vertex:K",
                                     help="Moves of the search: edge (two patterns at a "
                                     "time) or vertex:K (up to K)."),
    sharing: Sharing = options.choice(Sharing.subtree, "--sharing", "What patterns may "
                                      "evaluate once for all: any common part (subtree) or "
                                      "only a common beginning of their join orders (prefix)."),
    covering_solver: CoveringSolver = options.choice(
        CoveringSolver.auto, "--covering-solver", "Covering selections of consumer queries: "
        "auto (exact CP-SAT when a batch fits --covering-time-limit, else greedy)."),
    covering_time_limit: float = typer.Option(10.0, "--covering-time-limit",
                                              help="Seconds per batch for the covering "
                                              "solver (within --time-limit)."),
    engine: Engine = options.choice(Engine.auto, "--engine", "The engine that will run the "
                                    "plan: multi-step plans are kept only where their steps "
                                    "pay in time there (auto: local, as `run` picks for "
                                    "inputs under 2 GiB)."),
    quiet: bool = options.quiet(),
) -> None:
    """Choose each pattern's cheapest detection plan within its latency bound; write plan.json.

    Prints, per pattern, the chosen plan, its latency and expected cost against pushing every
    event, then the whole workload's saving.
    """
    started = command_started()  # --time-limit counts from here to the plan written
    from cepplan.fileio import read_json
    from cepplan.limits import MAX_K, MIN_TIME_LIMIT, at_least, bounded
    from cepplan.outputs import check_file_outputs
    from cepplan.planner.compose import Settings
    from cepplan.planner.covering_plan import CoveringSettings
    from cepplan.planner.deadline import TimeLimitTooShort
    from cepplan.planner.evaluation import EvaluationSettings
    from cepplan.planner.optimize import optimize
    from cepplan.planner.plan import write_plan
    from cepplan.stats.stats_file import observed_span, parse_stats
    from cepplan.workload import load_workload
    from cepplan.workload.durations import MAX_DURATION

    bounded("--time-limit", time_limit, low=MIN_TIME_LIMIT, high=MAX_TIME_LIMIT, inclusive=True)
    at_least("-k", k, 0, MAX_K)
    at_least("--dp-limit", dp_limit, 1, MAX_DP)
    _check_search(neighborhood, time_limit, covering_time_limit)
    check_file_outputs([output], [("workload", workload)] + (
        [("statistics", stats)] if stats else []))
    reading = time.perf_counter()
    loaded = load_workload(workload)
    notes: list[str] = []
    measured = read_json(stats) if stats else None
    statistics = (parse_stats(measured, str(stats), loaded, notes) if stats
                  else loaded.statistics)
    for note in notes:
        echo(f"note: {note}", err=True)
    step = None if time_step is None else bounded(
        "--time-step", options.duration_value("--time-step", time_step, loaded.time_unit),
        low=0, high=MAX_DURATION)
    settings = Settings(solver=solver.value, k=k or None, strategy=strategy.value, seed=seed,
                        time_limit=time_limit, step=step, dp_limit=dp_limit)
    deadline = _planning_deadline(started, time.perf_counter() - reading, time_limit)
    try:
        result = optimize(loaded, statistics, settings, str(stats) if stats else None,
                          share=not no_share,
                          evaluation_settings=EvaluationSettings(search.value, neighborhood,
                                                                 time_limit, seed,
                                                                 sharing=sharing.value),
                          covering=CoveringSettings(covering_solver.value, covering_time_limit,
                                                    seed),
                          engine="local" if engine.value == "auto" else engine.value,
                          duration=observed_span(measured, loaded) if stats else None,
                          deadline=deadline)
    except TimeLimitTooShort as exc:
        raise options.option_error("--time-limit", exc.advice(time_limit)) from None
    write_plan(result.plan, output)
    if not quiet:
        for line in summary(result, loaded):
            echo(line, lines=False)
        echo(f"plan written to {output}")


def _planning_deadline(started: float, reading: float, time_limit: float) -> float:
    """When planning must end for the plan to be written within the time limit: writing
    takes at most `WRITING_SHARE` of `reading` (the seconds reading the inputs took), and
    `FINISH_MARGIN` of the limit is kept in hand; an option error when starting and reading
    have taken it all already."""
    from cepplan.planner.deadline import TimeLimitTooShort

    writing = WRITING_SHARE * reading
    spent = time.perf_counter() - started
    if spent + writing > time_limit:
        raise options.option_error("--time-limit", TimeLimitTooShort(
            "start, read this workload and write its plan", spent + writing - time_limit,
        ).advice(time_limit))
    return started + (1 - FINISH_MARGIN) * time_limit - writing


def summary(result: Optimized, workload: Workload) -> list[str]:
    """The table `cepplan optimize` prints: pattern, chosen plan, latency, costs, saving."""
    from cepplan.planner.contexts import contexts_summary
    from cepplan.planner.covering_plan import covering_lines

    unit = workload.time_unit
    header = ("pattern", "chosen plan", "latency", f"cost/{unit}", f"naive/{unit}", "saving",
              "solver")
    rows = []
    for name, plan in result.plan.patterns.items():
        chosen = " -> ".join(",".join(sorted(step)) for step in plan.detection.steps)
        cost, naive = plan.detection.expected_cost, plan.naive_cost
        saving = f"{max(0.0, 100 * (1 - cost / naive)):.0f}%" if naive else "-"
        pattern = workload.pattern(name)
        shown = (f"{pattern.reported_as} timed out k={pattern.timed_out}" if pattern.timed_out
                 else name)  # a hidden pattern (cepplan/workload/timed_out.py)
        rows.append((shown, chosen, str(plan.detection.latency), f"{cost:.4g}", f"{naive:.4g}",
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
    lines += engine_step_lines(result.plan.provenance.get("engine_steps") or {})
    lines += [f"shared subevent {name}: sent once for {users}" for name, users
              in _shared_users(workload, outcome.shared)]
    if result.plan.sharing:
        lines += sharing_summary(result.plan.sharing)
    lines += [f"time limit: {note}" for note in result.plan.provenance.get("time_limit_notes", ())]
    return lines + contexts_summary(result.plan) + covering_lines(result.plan.covering)


def engine_step_lines(steps: Mapping[str, Any]) -> list[str]:
    """Why a pattern was left with one step although fetching in steps sends fewer events:
    on the engine that runs the plan, the steps cost more than they save."""
    saved = steps.get("seconds_saved_per_time_unit", {})
    return [f"{name}: one step on the {steps['engine']} engine: " + (
        "testing its later steps' events would cost more time than the events it saves"
        if saved.get(name, 0.0) <= 0 else
        "the steps of all patterns together would not repay the engine's fixed cost per "
        "run over the measured time span") for name in steps.get("one_step", ())]


def sharing_summary(sharing: dict) -> list[str]:
    """What the evaluation plan saves: partial matches vs each pattern in its own order."""
    cost = sharing["modelled_cost"]
    users = {name for s in sharing["shared"] for name in s["users"]}
    chosen = cost["chosen"]
    shared = (f"{len(sharing['shared'])} subtree(s) computed once for {len(users)} "
              "pattern(s)" if sharing["shared"] else "no subtree is shared")
    lines = [f"evaluation plan: {shared}; expected partial matches {chosen:.4g} vs "
             f"{cost['trivial']:.4g} evaluating each pattern alone in its own order"
             f"{fewer(cost['trivial'], chosen)}, {cost['sh']:.4g} sharing only, "
             f"{cost['re']:.4g} reordering only"]
    if "note" in sharing:
        lines.append(sharing["note"])
    for name, reason in sharing["unplanned"].items():
        lines.append(f"{name}: kept in its own order ({reason})")
    return lines


def fewer(baseline: float, cost: float) -> str:
    """" (2.8x fewer)" when `cost` is at least 5 % below `baseline`, else nothing."""
    return f" ({baseline / cost:.1f}x fewer)" if 0 < cost < 0.95 * baseline else ""


def _check_search(neighborhood: str, time_limit: float, covering_time_limit: float) -> None:
    """Options Click cannot check: the neighbourhood's spelling and positive time limits."""
    from cepplan.limits import MIN_TIME_LIMIT, bounded
    from cepplan.search.neighbourhood import parse_neighbourhood

    try:
        parse_neighbourhood(neighborhood)
    except ValueError as exc:
        raise options.option_error("--neighborhood", str(exc)) from exc
    for flag, value in (("--time-limit", time_limit),
                        ("--covering-time-limit", covering_time_limit)):
        if not value > 0:
            raise options.option_error(flag, f"must be more than 0 seconds, got {value}")
        bounded(flag, value, low=MIN_TIME_LIMIT, high=MAX_TIME_LIMIT, inclusive=True)


def _shared_users(workload: Workload, shared: tuple[str, ...]) -> list[tuple[str, str]]:
    """Each shared subevent and the patterns its one evaluation serves."""
    from cepplan.workload.detection_graph import detection_graph

    graph = detection_graph(workload)
    users = []
    for name in shared:
        parents = sorted(graph.predecessors(name))
        users.append((name, f"{len(parents)} patterns ({', '.join(parents)})"))
    return users
