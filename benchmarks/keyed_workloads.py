"""Keyed workloads and the brute force the keyed planner is measured against (bench_keyed,
tests/planner/test_keyed_planning.py).

- `clickstream_case`: the per-user clickstream of `cepplan.stats.sessions`, as files.
- `random_case`: a random keyed workload: one SEQ or AND pattern of 2-4 variables partitioned
  by a key of 10-10^5 values, uniform or Zipf over the keys, Poisson per key, with a filter
  and a join condition now and then.
- `brute_force`: every Pareto plan of the chosen plan's pattern and every order of one-event
  steps, each run by the in-process engine: rows to matchers, partial matches, seconds.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cepplan.planner.plan import DetectionPlan, PatternPlan, Plan, read_plan
from cepplan.report.compare import PartialMatches
from cepplan.stats.sessions import clickstream, clickstream_workload
from cepplan.stats.stats_file import observed_span, read_stats
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import apply_time_format, write_events
from cepplan.workload.loader import load_workload

HOTTEST_KEY_EVENTS = 4.0  # events of the hottest key per window, at most
NEAR_FASTEST, RETIMINGS = 1.5, 4  # plans this near the fastest, and the chosen one, run again


@dataclass(frozen=True)
class Case:
    """A workload with its event file, measured statistics and plan, all in `directory`."""

    name: str
    directory: Path
    description: str

    @property
    def workload(self) -> Path:
        return self.directory / "workload.json"

    @property
    def events(self) -> Path:
        return self.directory / "events.csv"

    @property
    def training(self) -> Path:
        """Events of the same generator with another seed: the statistics are measured on
        them, so the predictions are checked on events the planner never saw."""
        return self.directory / "training.csv"


def clickstream_case(directory: Path, users: int = 4500, seed: int = 1) -> Case:
    """The issue's clickstream: `users` users, a week, ISO timestamps."""
    directory.mkdir(parents=True, exist_ok=True)
    document = clickstream_workload()
    case = Case("clickstream", directory, f"{users} users, sessions, SEQ(v, c, p) per user")
    case.workload.write_text(json.dumps(document, indent=1))
    workload = load_workload(case.workload)
    for path, events_seed in ((case.events, seed), (case.training, seed + 10_000)):
        write_events(apply_time_format(clickstream(users=users, seed=events_seed), workload),
                     workload, path)
    return case


def random_case(directory: Path, seed: int, events: int = 60_000) -> Case:
    """A random keyed workload and its events (about `events` of them)."""
    rng = random.Random(seed)
    n = rng.choice([2, 3, 3, 3, 4])
    operator = rng.choice(["SEQ", "AND"])
    keys = round(10 ** rng.uniform(1, 5))
    skew = 0.0 if seed % 2 == 0 else rng.uniform(0.8, 1.4)
    duration = 20_000.0
    rates = {f"T{i}": 10 ** rng.uniform(-1.5, 0) for i in range(n)}
    scale = events / duration / sum(rates.values())
    rates = {t: r * scale for t, r in rates.items()}
    rarest = min(rates.values())
    window = round(10 ** rng.uniform(-0.5, 1.5) / rarest * 0.05 * (keys ** 0.5), 3)
    hottest = 1.0 / sum((i + 1) ** -skew for i in range(keys))  # the hottest key's share
    busiest = HOTTEST_KEY_EVENTS / (sum(rates.values()) * hottest)  # keeps it matchable
    window = round(min(max(window, 0.5), duration / 50, busiest), 3)
    variables = [f"v{i}" for i in range(n)]
    where = []
    if rng.random() < 0.5:
        where.append(f"{variables[rng.randrange(n)]}.x < {rng.choice([30, 50, 80])}")
    if n > 1 and rng.random() < 0.5:
        a, b = rng.sample(variables, 2)
        where.append(f"{a}.y == {b}.y")
    document = {
        "format": "cepplan.workload/1", "name": f"keyed-{seed}", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "event",
                   "time_column": "ts", "key_columns": ["k"]},
        "event_types": {t: {"attributes": {"k": "string", "x": "double", "y": "long"}}
                        for t in rates},
        "patterns": [{"name": "p", "structure": [operator, *[f"{v}:T{i}" for i, v in
                                                             enumerate(variables)]],
                      "where": where, "partition_by": ["k"], "within": window}]}
    directory.mkdir(parents=True, exist_ok=True)
    spread = f"zipf {skew:.2f}" if skew else "uniform"
    case = Case(f"random-{seed}", directory,
                f"{operator} of {n}, {keys} keys {spread}, W={window:g}")
    case.workload.write_text(json.dumps(document, indent=1))
    workload = load_workload(case.workload)
    for path, events_seed in ((case.events, seed), (case.training, seed + 10_000)):
        generated = synthesize(workload, duration=duration, seed=events_seed, rates=rates,
                               n_keys=keys, key_skew=skew, ranges={"y": (0, 5)},
                               truth_draws=1000)
        write_events(generated.events, workload, path)
    return case


def plan_case(case: Case, extra: Sequence[str] = ()) -> None:
    """`cepplan stats` on the training events then `cepplan optimize`, as a user runs them,
    into the case directory."""
    for command in (["stats", str(case.training), "-w", str(case.workload), "-o",
                     str(case.directory / "stats.json"), "-q"],
                    ["optimize", str(case.workload), "--stats",
                     str(case.directory / "stats.json"), "-o",
                     str(case.directory / "plan.json"), "-q", *extra]):
        subprocess.run([sys.executable, "-m", "cepplan", *command], check=True, timeout=600)


@dataclass(frozen=True)
class Measured:
    """One plan run: its steps, rows to matchers, partial matches per window and seconds,
    beside the model's predictions for the same plan."""

    label: str
    steps: tuple[frozenset[str], ...]
    rows: int
    partial: float
    matches: int
    seconds: float
    cpu: float  # the process's CPU seconds over the run (its threads included)
    predicted_rows: float | None = None
    predicted_partial: float | None = None


def steps_label(steps: Sequence[frozenset[str]]) -> str:
    return " -> ".join(",".join(sorted(s)) for s in steps)


def run_plan(case: Case, plan: Plan, label: str) -> Measured:
    """Run `plan` with the in-process engine; its one pattern's figures."""
    from cepplan.engine_adapter.job_spec import job_data
    from cepplan.engine_adapter.local.engine import run_local_job

    workload = load_workload(str(case.workload))
    with tempfile.TemporaryDirectory(prefix="cepplan-keyed-") as scratch:
        start, cpu_start = time.perf_counter(), time.process_time()
        metrics = run_local_job(job_data(workload, plan), [str(case.events)],
                                Path(scratch) / "out", say=lambda _text: None)
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    name = workload.patterns[0].name
    body = plan.patterns[name]
    return Measured(label, body.detection.steps, metrics["rows_to_matchers_by_pattern"][name],
                    metrics["partial_matches"][name]["per_window"],
                    sum(metrics["matches"].values()), seconds, cpu)


def with_steps(case: Case, steps: Sequence[frozenset[str]]) -> Plan:
    """The one-pattern plan that runs `steps`, joined in step order."""
    workload = load_workload(str(case.workload))
    pattern = workload.patterns[0]
    position = {o.var: (o.kind == "negated", o.position) for o in pattern.operands}
    order = [v for step in steps for v in sorted(step, key=lambda v: position[v])]
    order.sort(key=lambda v: position[v][0])
    body = PatternPlan(pattern.name, DetectionPlan(tuple(frozenset(s) for s in steps)),
                       tuple(order))
    return Plan(MappingProxyType({pattern.name: body}), workload.path, workload.digest)


def predictions(case: Case, plan: Plan) -> tuple[float, float | None]:
    """The model's rows to matchers over the statistics' span and partial matches per window
    for the plan's pattern, from the case's statistics."""
    workload = load_workload(str(case.workload))
    stats_file = case.directory / "stats.json"
    statistics = read_stats(stats_file, workload)
    span = observed_span(json.loads(stats_file.read_text()), workload) or math.nan
    name = workload.patterns[0].name
    body = plan.patterns[name]
    from cepplan.planner.compose import Settings, compose

    result = compose(workload, statistics, Settings())[name]
    from cepplan.planner.candidates import evaluate

    cost = evaluate(result.model, body.detection.steps, result.plain_options,
                    {v: 0 for v in result.plain_options}).cost
    return cost * span, PartialMatches(workload, statistics).of(
        name, body.order, body.detection.steps)


def brute_force(case: Case) -> tuple[Measured, list[Measured]]:
    """The chosen plan and every alternative (Pareto plans, every order of one-event steps),
    each run and predicted."""
    workload = load_workload(str(case.workload))
    chosen_plan = read_plan(case.directory / "plan.json", workload)
    name = workload.patterns[0].name
    variables = [o.var for o in workload.patterns[0].operands]
    candidates: dict[str, tuple[frozenset[str], ...]] = {}
    for option in chosen_plan.patterns[name].pareto:
        candidates[steps_label(option.steps)] = option.steps
    for order in itertools.permutations(variables):
        steps = tuple(frozenset([v]) for v in order)
        candidates[steps_label(steps)] = steps
    candidates[steps_label((frozenset(variables),))] = (frozenset(variables),)

    def measured(plan: Plan, label: str) -> Measured:
        run = run_plan(case, plan, label)
        rows, partial = predictions(case, plan)
        return Measured(run.label, run.steps, run.rows, run.partial, run.matches,
                        run.seconds, run.cpu, rows, partial)

    run_plan(case, chosen_plan, "warm-up")  # imports and caches, outside the timed runs
    chosen = measured(chosen_plan, "chosen: " + steps_label(
        chosen_plan.patterns[name].detection.steps))
    others = [measured(with_steps(case, steps), label) for label, steps in candidates.items()]
    return _retimed(case, chosen_plan, chosen, others, candidates)


def _retimed(case: Case, chosen_plan: Plan, chosen: Measured, others: list[Measured],
             candidates: dict[str, tuple[frozenset[str], ...]]
             ) -> tuple[Measured, list[Measured]]:
    """The chosen plan and every alternative within NEAR_FASTEST of the fastest first run,
    timed RETIMINGS more times in interleaved rounds, each keeping its least time: one run on
    a shared machine is noise; the least of a few, interleaved so that a busy spell hits
    every plan alike, is the plan's own (as `timeit` takes)."""
    fastest = min(m.seconds for m in others)
    near = [i for i, m in enumerate(others) if m.seconds <= NEAR_FASTEST * fastest]
    plans = {i: with_steps(case, candidates[others[i].label]) for i in near}
    best = {i: (others[i].seconds, others[i].cpu) for i in near}
    chosen_best = (chosen.seconds, chosen.cpu)
    for _ in range(RETIMINGS):
        chosen_best = _least(chosen_best, run_plan(case, chosen_plan, chosen.label))
        for i in near:
            best[i] = _least(best[i], run_plan(case, plans[i], others[i].label))
    others = [replace(m, seconds=best[i][0], cpu=best[i][1]) if i in best else m
              for i, m in enumerate(others)]
    return replace(chosen, seconds=chosen_best[0], cpu=chosen_best[1]), others


def _least(kept: tuple[float, float], run: Measured) -> tuple[float, float]:
    """The least wall and the least CPU seconds over the runs so far."""
    return min(kept[0], run.seconds), min(kept[1], run.cpu)


def summary(chosen: Measured, others: Sequence[Measured]) -> dict[str, Any]:
    """The ratios the targets are about."""
    best = min(others, key=lambda m: m.rows)
    best_rows = best.rows
    best_seconds = min(m.seconds for m in others)
    return {"chosen": chosen.label.removeprefix("chosen: "), "best": best.label,
            "rows": chosen.rows, "best_rows": best_rows,
            "rows_ratio": chosen.rows / best_rows if best_rows else math.inf,
            "seconds": chosen.seconds, "best_seconds": best_seconds,
            "seconds_ratio": chosen.seconds / best_seconds,
            "cpu_ratio": chosen.cpu / min(m.cpu for m in others),
            "rows_error": _error(chosen.predicted_rows, chosen.rows),
            "partial_error": _error(chosen.predicted_partial, chosen.partial)}


def _error(predicted: float | None, measured: float) -> float:
    if predicted is None:
        return math.nan
    if measured == 0:
        return 0.0 if predicted == 0 else math.inf
    return predicted / measured - 1.0
