"""The shared plan on the local engine (seed 004 §6): wall time and partial matches of the
trading-rules example and a synthetic many-pattern workload under the chosen plan (shared
and, for comparison, unshared) vs trivial, SH and RE, side by side in one run, with matches
checked identical across plans; measured vs modelled partial matches per shared node.
Streams are long enough for runs of seconds, not tenths (where set-up would weigh more than
matching); every figure is the median of interleaved repeats. Per plan, the user and system
CPU of the engine thread and of the match writer's thread are shown apart (the output's
cost, docs/matching.md "Output cost").
`CEPPLAN_BENCH_SHARING=plans` runs only the plan comparison of the trading rules and the
synthetic workload (no common prefix, no partial matches per pattern, no OpenCEP).
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from benchmarks.sharing_vs_opencep import versus_opencep
from cepplan.costmodels.trees import node_cost
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import writer as local_writer
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime.job import job_from_json, partitions
from cepplan.engine_adapter.runtime.matcher import CHUNK_EVENTS, MatchContext, match_partition
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.engine_adapter.runtime.shared_plan import evaluate_group
from cepplan.engine_adapter.runtime.table import make_table
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.search.baselines import cost_floor, sharing_floor
from cepplan.search.local import Compiled, Interner
from cepplan.search.problem import problem_from_workload
from cepplan.search.synthetic import synthetic_workload
from cepplan.workload.loader import build_workload, load_workload

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "trading_rules"
RUNS = ("trivial", "re", "sh", "chosen unshared", "chosen")


THREAD_CPU = ("engine user", "engine sys", "writer user", "writer sys", "engine faults")


def main(quick: bool = False) -> None:
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    limit = 2.0 if quick else 10.0
    plans_only = os.environ.get("CEPPLAN_BENCH_SHARING") == "plans"
    with tempfile.TemporaryDirectory() as tmp:
        for title, wl, events in workloads(Path(tmp), quick):
            if plans_only and "common prefix" in title:
                continue
            _compare(title, wl, events, limit, Path(tmp), repeats=1 if quick else 5)
            if title.startswith("synthetic") and not plans_only:
                _partials_per_pattern(title, wl, events, limit)
        if not plans_only:
            versus_opencep(Path(tmp), limit, patterns=12 if quick else 24,
                            seconds=30.0 if quick else 90.0)
    print(f"load at the end: {os.getloadavg()[0]:.2f} (1 min)")


class ThreadCPU:
    """The user and system CPU seconds of the calling thread (the engine's) and of the match
    writer's thread over one run, and the engine thread's minor page faults: the writer's
    thread reads its own on exit (`getrusage(RUSAGE_THREAD)`, Linux)."""

    def __init__(self) -> None:
        self.writer = (0.0, 0.0)
        self._start = resource.getrusage(resource.RUSAGE_THREAD)

    def __enter__(self) -> ThreadCPU:
        run = local_writer.BackgroundFile._run

        def measured(file) -> None:
            try:
                run(file)
            finally:
                usage = resource.getrusage(resource.RUSAGE_THREAD)
                self.writer = (usage.ru_utime, usage.ru_stime)

        self._saved = run
        local_writer.BackgroundFile._run = measured
        self._start = resource.getrusage(resource.RUSAGE_THREAD)
        return self

    def __exit__(self, *exc) -> None:
        local_writer.BackgroundFile._run = self._saved
        end = resource.getrusage(resource.RUSAGE_THREAD)
        self.seconds = dict(zip(THREAD_CPU, (end.ru_utime - self._start.ru_utime,
                                             end.ru_stime - self._start.ru_stime, *self.writer,
                                             end.ru_minflt - self._start.ru_minflt),
                                strict=True))


def workloads(tmp: Path, quick: bool) -> Iterator[tuple[str, Any, Path]]:
    """The three workloads (title, workload, events file): the trading-rules example, a
    synthetic §6.1-like one (100 ms window, conditions calibrated), one common prefix;
    full-size streams make each plan's run take seconds."""
    events = _example_events(tmp, seconds=150.0 if quick else 6000.0)
    yield "examples/trading_rules", load_workload(EXAMPLE / "workload.json"), events
    # 100 ms: at 200 ms millions of complete matches, minutes per plan. No KLEENE: one
    # Kleene pattern's complete matches (rendered and written, the same in every plan)
    # would otherwise take nearly all the time
    raw = synthetic_workload(40 if quick else 100, seed=1, window_s=1, special=0.1)
    for pattern in raw["patterns"]:
        pattern["structure"] = [o[1] if isinstance(o, list) and o[0] == "KLEENE" else o
                                for o in pattern["structure"]]
        pattern["within"] = "100ms"
    means = _calibrate(raw)
    wl = build_workload(raw)
    events = _synthetic_events(wl, tmp, seconds=5.0 if quick else 100.0, means=means)
    yield f"synthetic {len(wl.patterns)} patterns, window 100ms", wl, events
    wl = build_workload(_common_prefix_workload(30 if quick else 60))
    events = _synthetic_events(wl, tmp, seconds=20.0 if quick else 600.0, name="prefix")
    yield f"{len(wl.patterns)} patterns on one common prefix", wl, events


def _common_prefix_workload(n: int) -> dict:
    """Seed 004's favourable case: every pattern is SEQ(a, b, c, d) over the same frequent
    A, B, C with the same conditions, then its own rare D: many partial matches of the
    common part, few complete matches."""
    rare = [f"D{i:02d}" for i in range(n)]
    patterns = [{"name": f"q{i:02d}", "structure": ["SEQ", "a:A", "b:B", "c:C", f"d:{t}"],
                 "where": ["a.diff < b.diff", "b.diff < c.diff", "c.diff < d.diff"],
                 "within": "1s"} for i, t in enumerate(rare)]
    return {
        "format": "cepplan.workload/1", "name": "common_prefix", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "type", "time_column": "ts"},
        "schemas": {"Tick": {"price": "double", "diff": "double"}},
        "event_types": {t: {"schema": "Tick"} for t in ("A", "B", "C", *rare)},
        "patterns": patterns,
        "statistics": {"rates": {"A": 20.0, "B": 20.0, "C": 20.0, **{t: 0.3 for t in rare}},
                       "selectivities": {p["name"]: {w: 0.5 for w in p["where"]}
                                         for p in patterns}},
    }


def best_runs(runs: Sequence[str], run: Callable[[str, Path], dict],
              matching: Callable[[dict], float], tmp: Path, repeats: int,
              cpu: dict[str, float] | None = None,
              pick: Callable[[list[float]], float] = min, warm_up: bool = False,
              engine: dict[str, float] | None = None,
              threads: dict[str, dict[str, float]] | None = None
              ) -> tuple[dict[str, float], dict[str, float], dict[str, dict], dict[str, dict]]:
    """Each named plan run `repeats` rounds, interleaved so that drift in the machine's load
    hits every plan alike: per plan the wall and matching seconds of its rounds reduced by
    `pick` (the best, or the median), its matches (from the last round) and its metrics.
    `run(name, out)` runs one plan into `out`; `matching` reads the matching seconds from
    its metrics. Each round starts one plan later, and each run after its previous output is
    removed and the earlier ones flushed to disk (untimed). With `cpu`, the CPU seconds of
    this process per plan (`pick`ed) go there too (in-process runs), and with `engine` those
    of the calling thread alone (the engine's, without the match writer's thread). With
    `warm_up`, the first plan runs once untimed first (the process's first run pays for
    imports and growing its heap). With `threads`, per plan the user and system CPU of the
    engine and writer threads (`ThreadCPU`), each `pick`ed."""
    times: dict[str, dict[str, list[float]]] = {"wall": {}, "match": {}, "cpu": {},
                                                "engine": {}, **{k: {} for k in THREAD_CPU}}
    if warm_up:
        run(runs[0], tmp / "warm-up")
    found: dict[str, dict] = {}
    metrics: dict[str, dict] = {}
    for index in range(repeats):
        # each round starts one plan later, and each run starts with the earlier outputs
        # removed and written back, so that no plan always runs last and no run inherits
        # the unwritten output of the runs before it (up to 1.4 GB a run): the kernel writes
        # it back, or throttles the writer for it, during the next run
        shift = index % len(runs)
        for name in [*runs[shift:], *runs[:shift]]:
            out = tmp / name.replace(" ", "_")
            shutil.rmtree(out, ignore_errors=True)
            os.sync()
            start, clock, own = time.perf_counter(), time.process_time(), time.thread_time()
            with ThreadCPU() as usage:
                metrics[name] = run(name, out)
            times["wall"].setdefault(name, []).append(time.perf_counter() - start)
            for key, value in usage.seconds.items():
                times[key].setdefault(name, []).append(value)
            times["cpu"].setdefault(name, []).append(time.process_time() - clock)
            times["engine"].setdefault(name, []).append(time.thread_time() - own)
            times["match"].setdefault(name, []).append(matching(metrics[name]))
    for name in runs:  # the last round's output of each plan
        found[name] = _matches(tmp / name.replace(" ", "_"))
    if cpu is not None:
        cpu.update({name: pick(t) for name, t in times["cpu"].items()})
    if engine is not None:
        engine.update({name: pick(t) for name, t in times["engine"].items()})
    if threads is not None:
        threads.update({name: {k: pick(times[k][name]) for k in THREAD_CPU} for name in runs})
    return ({name: pick(t) for name, t in times["wall"].items()},
            {name: pick(t) for name, t in times["match"].items()}, found, metrics)


def plans_and_jobs(wl, limit: float) -> tuple[dict[str, Any], dict[str, dict]]:
    """The compared plans (trivial, RE, SH, the chosen one by tabu search within `limit`
    seconds) and their jobs, with "chosen unshared": the chosen trees without sharing."""
    base = trivial_plan(wl)
    plans = {"trivial": base}
    for name, search in (("re", "re"), ("sh", "sh"), ("chosen", "tabu")):
        plans[name] = evaluation(wl, wl.statistics, base, EvaluationSettings(search, "edge", limit))
    jobs = {name: job_data(wl, plan) for name, plan in plans.items()}
    jobs["chosen unshared"] = {k: v for k, v in jobs["chosen"].items() if k != "sharing"}
    return plans, jobs


def _compare(title: str, wl, events: Path, limit: float, tmp: Path, repeats: int) -> None:
    """Every plan on the same events, `repeats` rounds interleaved; median per plan."""
    plans, jobs = plans_and_jobs(wl, limit)
    cpu: dict[str, float] = {}
    engine: dict[str, float] = {}
    threads: dict[str, dict[str, float]] = {}
    wall, match_s, found, metrics = best_runs(
        RUNS, lambda name, out: run_local_job(jobs[name], [str(events)], out,
                                              say=lambda _: None),
        lambda m: sum(v for k, v in m["seconds"].items() if k.startswith("match ")),
        tmp, repeats, cpu, pick=statistics.median, warm_up=True, engine=engine,
        threads=threads)
    frame = _canonical(events)
    rounds: dict[str, list[float]] = {name: [] for name in RUNS}
    for _ in range(repeats):  # interleaved, median CPU seconds per plan
        for name in RUNS:
            rounds[name].append(_join_seconds(jobs[name], frame, name == "chosen"))
    joins = {name: statistics.median(t) for name, t in rounds.items()}
    same = all(found[n] == found["trivial"] for n in RUNS)
    n_events = metrics["trivial"]["rows_read"]
    total = sum(metrics["trivial"]["matches"].values())
    print(f"\n-- {title}: {n_events} events, {total} matches; identical across plans: {same}"
          f"; median of {repeats} interleaved runs per plan")
    print(f"{'plan':>16} {'modelled':>10} {'wall s':>8} {'vs trivial':>10} {'CPU s':>8} "
          f"{'vs trivial':>10} {'engine CPU s':>12} {'vs trivial':>10} {'matching s':>10} "
          f"{'vs trivial':>10} {'joins CPU s':>11} {'vs trivial':>10}")
    for name in RUNS:
        plan = plans[name.split()[0]]
        modelled = plan.sharing["modelled_cost"]["chosen"] if plan.sharing else \
            (plans["re"].sharing or {}).get("modelled_cost", {}).get("trivial", float("nan"))
        if name == "chosen unshared":
            modelled = float("nan")
        print(f"{name:>16} {modelled:>10.4g} {wall[name]:>8.2f} "
              f"{wall['trivial'] / wall[name]:>9.2f}x {cpu[name]:>8.2f} "
              f"{cpu['trivial'] / cpu[name]:>9.2f}x {engine[name]:>12.2f} "
              f"{engine['trivial'] / engine[name]:>9.2f}x {match_s[name]:>10.2f} "
              f"{match_s['trivial'] / match_s[name]:>9.2f}x {joins[name]:>11.3f} "
              f"{joins['trivial'] / joins[name]:>9.2f}x")
    print("CPU seconds by thread, median (the writer's thread copies the lines into the file)")
    print(f"{'plan':>16} " + " ".join(f"{k:>13}" for k in THREAD_CPU))
    for name in RUNS:
        print(f"{name:>16} " + " ".join(f"{threads[name][k]:>13.0f}" if k == "engine faults"
                                        else f"{threads[name][k]:>13.3f}" for k in THREAD_CPU))
    best = {label: min(values[n] for n in ("re", "sh")) / values["chosen"]
            for label, values in (("wall", wall), ("CPU", cpu), ("engine CPU", engine),
                                  ("matching", match_s), ("joins", joins))}
    print("chosen shared plan vs the best of SH and RE: " + ", ".join(
        f"{label} {ratio:.2f}x ({abs(1 - 1 / ratio) * 100:.0f} % "
        f"{'less' if ratio >= 1 else 'more'} time)" for label, ratio in best.items()))
    _modelled_reach(wl, plans)
    nodes = metrics["chosen"].get("shared_nodes", [])
    if nodes:
        measured = sum(n["per_window"] for n in nodes)
        modelled = sum(n["modelled_per_window"] or 0.0 for n in nodes)
        ratios = [n["per_window"] / n["modelled_per_window"] for n in nodes
                  if n["modelled_per_window"]]
        print(f"shared nodes: {len(nodes)} with {sum(len(n['users']) for n in nodes)} users; "
              f"partial matches computed once: {sum(n['partial_matches'] for n in nodes)}; "
              f"per window measured {measured:.4g} vs modelled {modelled:.4g} "
              f"(per node measured/modelled: median {np.median(ratios):.2f}, "
              f"range {min(ratios):.2f}–{max(ratios):.2f})")


def _modelled_reach(wl, plans: dict[str, Any]) -> None:
    """What the cost model lets any plan gain over RE as the engine runs it (leaves once,
    coinciding subtrees shared): every plan pays the complete matches, negation and each
    type's leaf alike, so only inner partial matches differ, and no multitree goes below the
    floor (`cost_floor`, `sharing_floor`; seed 004 App. C)."""
    interner = Interner()
    compiled = [Compiled(p, interner)
                for p in problem_from_workload(wl, wl.statistics).patterns]
    roots, negation, leaves = cost_floor(compiled)
    fixed = roots + negation + leaves
    floor = max(fixed, sharing_floor(compiled))
    modelled = {name: plans[name].sharing["modelled_cost"]["chosen"]
                for name in ("re", "sh", "chosen") if plans[name].sharing}
    if "re" not in modelled or "chosen" not in modelled:
        return
    inner = {name: cost - fixed for name, cost in modelled.items()}
    print(f"modelled per window: complete matches {roots:.4g}, negation {negation:.3g}, each "
          f"type's leaf once {leaves:.4g} (the same in every plan: "
          f"{100 * fixed / modelled['re']:.0f} % of RE's {modelled['re']:.4g}); inner partial "
          f"matches " + " / ".join(f"{n.upper() if n != 'chosen' else n} {v:.4g}"
                                   for n, v in inner.items())
          + f" (chosen {100 * (1 - inner['chosen'] / inner['re']):.0f} % below RE); no plan "
          f"below {floor:.4g}: at most {100 * (1 - floor / modelled['re']):.1f} % below RE in "
          f"all (chosen {100 * (1 - modelled['chosen'] / modelled['re']):.1f} %)")


def _canonical(events: Path) -> pd.DataFrame:
    csv = pd.read_csv(events)
    type_column = "symbol" if "symbol" in csv.columns else "type"
    return pd.DataFrame({"__type": csv[type_column], "__ts": csv["ts"], "__id": csv.index,
                         "price": csv["price"], "diff": csv["diff"]})


def _join_seconds(data: dict, frame: pd.DataFrame, share: bool) -> float:
    """CPU seconds the matcher spends joining (Kleene and negation included) without
    rendering or writing matches: every pattern on its own, or the sharing groups' nodes
    once each."""
    job = job_from_json(data)
    start = time.process_time()
    plan = sharing_plan(job) if share else None
    done: set[str] = set()
    for names in plan.groups() if plan else ():
        types = {o.type for n in names for o in job.pattern(n).operands}
        for group in partitions(frame[frame["__type"].isin(types)],
                                job.pattern(names[0]).partition_by):
            evaluate_group(group, job, plan, names, render=False)
        done.update(names)
    for spec in job.patterns:
        if spec.name in done:
            continue
        types = {o.type for o in spec.operands}
        for group in partitions(frame[frame["__type"].isin(types)], spec.partition_by):
            match_partition(make_table(group, ["price", "diff"]), spec, job.stages[spec.name])
    return time.process_time() - start


def _partials_per_pattern(title: str, wl, events: Path, limit: float) -> None:
    """Per pattern of the chosen plan, the partial matches of every prefix of the join order
    the engine runs (its tree's leaves, cheaper side first), measured per window of the
    stream, against the cost model's C(prefix) (docs/sharing.md's normalisation)."""
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", limit))
    job = job_from_json(job_data(wl, plan))
    searched = {p.name: p for p in problem_from_workload(wl, wl.statistics).patterns}
    frame = _canonical(events)
    span = float(frame["__ts"].max() - frame["__ts"].min())
    ratios, measured_all, predicted_all, skipped = [], 0.0, 0.0, 0
    lines = []
    for spec in job.patterns:
        pattern = searched.get(spec.name)
        if pattern is None or spec.negated or any(o.kind != "plain" for o in spec.positive):
            skipped += 1
            continue
        table = make_table(frame[frame["__type"].isin({o.type for o in spec.operands})],
                           ["price", "diff"])
        context = MatchContext(table, spec, job.stages[spec.name])
        order = [v for v in spec.order if v in pattern.rates]
        measured = predicted = 0.0
        for k in range(2, len(order) + 1):
            prefix = tuple(o for o in spec.positive if o.var in order[:k])
            count = 0
            for start in range(0, len(table), CHUNK_EVENTS):
                rows = context.join(prefix, start, min(len(table), start + CHUNK_EVENTS))
                if rows:
                    count += int(np.count_nonzero(np.max(np.vstack(list(rows.values())),
                                                         axis=0) >= start))
            measured += count * pattern.window / (span * k)
            predicted += node_cost(order[:k], pattern.window, pattern.rates,
                                   pattern.selectivities, pattern.seq)
        measured_all += measured
        predicted_all += predicted
        if predicted > 0:
            ratios.append(measured / predicted)
            lines.append((spec.name, measured, predicted))
    ratios_arr = np.array(ratios)
    print(f"partial matches per pattern, chosen plan ({title}; the engine's join prefixes of "
          f"2+ events, per window): {len(ratios)} patterns ({skipped} with NOT/Kleene left "
          f"out); all patterns measured {measured_all:.4g} vs predicted {predicted_all:.4g}; "
          f"measured/predicted per pattern median {np.median(ratios_arr):.2f}, 10-90 % "
          f"{np.percentile(ratios_arr, 10):.2f}-{np.percentile(ratios_arr, 90):.2f}")
    for name, measured, predicted in sorted(lines, key=lambda x: -x[2])[:8]:
        print(f"{name:>10}: measured {measured:>10.4g} predicted {predicted:>10.4g} "
              f"({measured / predicted:.2f})")


def _calibrate(raw: dict, spread: float = 4.0) -> dict[str, float]:
    """Per-type means of `diff` (normal, sd 1) such that each `x.diff < y.diff` of the
    generated workload has a known selectivity, Φ((μ_y − μ_x)/√2) — set in its statistics,
    so the plan is made from what holds on the events (0.003–0.997 with spread 4)."""
    rng = random.Random(5)
    means = {t: rng.uniform(0.0, spread) for t in raw["event_types"]}
    for pattern in raw["patterns"]:
        types = {}
        for operand in pattern["structure"][1:]:
            text = operand if isinstance(operand, str) else operand[1]
            var, kind = text.split(":")
            types[var] = kind
        selectivities = {}
        for text in pattern["where"]:
            left, right = (side.strip().split(".")[0] for side in text.split("<"))
            gap = (means[types[right]] - means[types[left]]) / math.sqrt(2.0)
            selectivities[text] = 0.5 * (1.0 + math.erf(gap / math.sqrt(2.0)))
        raw["statistics"]["selectivities"][pattern["name"]] = selectivities
    return means


def _matches(out: Path) -> dict[str, tuple[int, str]]:
    """Per pattern, how many matches and a digest of them in a canonical form (each match
    object with sorted keys, sorted): equal digests, equal matches, whatever the plan's
    join order."""
    lines: dict[str, list[bytes]] = {}
    for part in sorted((out / "matches").iterdir()):
        if part.name.startswith((".", "_")):
            continue
        for line in part.read_bytes().splitlines():
            match = orjson.loads(line)
            lines.setdefault(match["pattern"], []).append(
                orjson.dumps(match, option=orjson.OPT_SORT_KEYS))
    return {p: (len(m), hashlib.sha256(b"\n".join(sorted(m))).hexdigest())
            for p, m in lines.items()}


def _example_events(tmp: Path, seconds: float) -> Path:
    """The example's events up to `seconds`; beyond the file's span, the file again
    shifted by whole spans (copies in time order)."""
    csv = pd.read_csv(EXAMPLE / "events.csv")
    span = math.ceil(csv["ts"].max())
    copies = [csv.assign(ts=csv["ts"] + k * span) for k in range(math.ceil(seconds / span))]
    frame = pd.concat(copies, ignore_index=True)
    path = tmp / "trading.csv"
    frame[frame["ts"] < seconds].to_csv(path, index=False)
    return path


def _synthetic_events(wl, tmp: Path, seconds: float,
                      means: dict[str, float] | None = None, name: str = "synthetic") -> Path:
    """Poisson streams at the workload's statistics' rates; diff uniform in [0, 100), or
    normal around each type's mean (`_calibrate`)."""
    rng = np.random.default_rng(7)
    rows = []
    for event_type, rate in wl.statistics.rates.items():
        n = rng.poisson(rate * seconds)
        rows.append(pd.DataFrame({"type": event_type, "ts": rng.uniform(0, seconds, n)}))
    frame = pd.concat(rows).sort_values("ts", kind="stable").reset_index(drop=True)
    frame["price"] = rng.uniform(0, 100, len(frame)).round(2)
    frame["diff"] = rng.uniform(0, 100, len(frame)).round(2) if means is None else \
        rng.normal(frame["type"].map(means).to_numpy(dtype=float), 1.0)
    path = tmp / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path
