"""`cepplan compare WORKLOAD EVENTS...`: every planner's plan run on the user's events with the
in-process engine, measured beside what the model predicted. Plans change cost, never results:
the matches of every run are compared, and a difference is reported loudly. The variants run
too: the plan with shared subtrees (partial matches per shared node), the context-independent
plan (its matches filtered to the context windows must equal the context-aware ones) and
each covering solver on the consumer queries."""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepplan.engine_adapter.runtime.timed_out_output import MATCHES_DIR, TIMED_OUT_DIR
from cepplan.planner.plan import Plan
from cepplan.report.variants import independent_workload
from cepplan.workload.model import Workload


@dataclass(frozen=True)
class Run:
    """One plan run: its metrics, wall time and its output directory."""

    metrics: dict[str, Any]
    seconds: float
    directory: Path
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        texts = self.matches()
        object.__setattr__(self, "digest", hashlib.sha256(
            json.dumps(texts, sort_keys=True).encode()).hexdigest())

    def matches(self) -> dict[str, list[str]]:
        """Every match by pattern, timed-out partial matches included, each as canonical JSON,
        sorted: neither the order of the matches nor of the variables within one (a plan's join
        order sets it) matters."""
        found: dict[str, list[str]] = {}
        folders = [self.directory / MATCHES_DIR, self.directory / TIMED_OUT_DIR]
        for part in sorted(p for f in folders if f.is_dir() for p in f.iterdir()):
            if part.name.startswith((".", "_")):
                continue
            for line in part.read_text().splitlines():
                obj = json.loads(line)
                found.setdefault(obj["pattern"], []).append(_canonical(obj))
        return {name: sorted(texts) for name, texts in sorted(found.items())}


class Runner:
    """Runs plans of one workload on one set of event files, in a scratch directory."""

    def __init__(self, workload: Workload, events: Sequence[str], scratch: Path,
                 progress: Callable[[str], None]):
        self.workload, self.events, self.scratch, self.progress = (
            workload, list(events), scratch, progress)

    def run(self, name: str, plan: Plan, *, kind: str = "plan", contexts: bool = True,
            covering: Mapping[str, Any] | None = None) -> Run:
        from cepplan.engine_adapter.job_spec import job_data
        from cepplan.engine_adapter.local.engine import run_local_job

        self.progress(f"running the {name} plan on the events")
        workload = self.workload if contexts else independent_workload(self.workload)
        out = self.scratch / name
        start = time.perf_counter()
        metrics = run_local_job(job_data(workload, plan, plan_kind=kind), self.events, out,
                                covering=covering, say=lambda _text: None)
        return Run(metrics, time.perf_counter() - start, out)


def measure_plans(report: Mapping[str, Any], plans: Mapping[str, Plan], workload: Workload,
                  events: Sequence[str], progress: Callable[[str], None] = lambda _: None, *,
                  shared: Plan | None = None, independent: Plan | None = None,
                  covering: Mapping[str, Mapping[str, Any]] | None = None,
                  warn: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The `measured` section: per planner rows to matchers, transmission factor measured
    (against the trivial plan's rows) and predicted (its modelled cost against trivial's),
    partial matches per window measured and predicted, matches and wall time;
    `matches_equal` says whether every plan found the same matches. With `shared`, the plan
    whose shared subtrees run once; with `independent`, the context-independent plan; with
    `covering`, each solver's covering section run on the consumer queries. What the runs
    left out (`metrics_table.run_warnings`) goes to `warn`, each line once."""
    totals = {p["name"]: p["total_cost"] for p in report["planners"]}
    predicted = {p["name"]: p["patterns"] for p in report["planners"]}
    out: dict[str, Any] = {"engine": "local", "events": [str(e) for e in events]}
    with tempfile.TemporaryDirectory(prefix="cepplan-compare-") as scratch:
        runner = Runner(workload, events, Path(scratch), progress)
        done = {name: runner.run(name, plan, kind="trivial" if name == "trivial" else "plan")
                for name, plan in plans.items()}
        if shared is not None and workload.contexts is None:
            done["shared"] = runner.run("shared", shared)
            out["shared_nodes"] = done["shared"].metrics.get("shared_nodes", [])
        runs = [_run_row(name, run, predicted.get(name), totals.get(name))
                for name, run in done.items()]
        trivial_rows = done["trivial"].metrics["rows_to_matchers"]
        for row in runs:
            row["measured_factor"] = (row["rows_to_matchers"] / trivial_rows
                                      if trivial_rows else None)
            row["predicted_factor"] = (totals[row["planner"]] / totals["trivial"]
                                       if totals.get("trivial") and row["planner"] in totals
                                       else None)
        from cepplan.engine_adapter.metrics_table import run_warnings
        from cepplan.sources.time_text import time_writer

        writer = time_writer(workload.source and workload.source.time_format,
                             workload.time_unit)
        for line in dict.fromkeys(line for run in done.values() for line in run_warnings(
                run.metrics, workload.options.kleene_cap, writer)):
            warn(line)
        digests = {r.digest for r in done.values()}
        out.update(runs=runs, matches_equal=len(digests) == 1,
                   rows_read=done["trivial"].metrics["rows_read"],
                   rows_rejected=done["trivial"].metrics["rows_rejected"])
        if independent is not None:
            alone = runner.run("context-independent", independent, contexts=False)
            out["contexts"] = _contexts_measured(done["dp"], alone, workload)
        if covering:
            modelled = {s["solver"]: s for s in report.get("covering", {}).get("solvers", [])}
            out["covering"] = [_covering_row(solver, runner.run(
                f"covering-{solver}", plans["dp"], covering=section), modelled.get(solver))
                for solver, section in covering.items()]
    return out


def matches_equal(measured: Mapping[str, Any]) -> bool:
    """Whether every plan found the same matches, and the context-aware matches equal the
    context-independent ones filtered to the windows."""
    return measured["matches_equal"] and measured.get("contexts", {}).get("matches_equal", True)


def _run_row(name: str, run: Run, predicted: Mapping[str, Any] | None,
             total: float | None) -> dict[str, Any]:
    """One run's figures; partial matches over the patterns the matcher counted them for,
    predicted over the same patterns (None where the model has no figure). A plan with shared
    subtrees has none here: its users' own joins are not counted, only the shared subtrees
    (`shared_nodes`, shown per subtree). Predicted rows to matchers: the plan's modelled cost
    (`total`, events per time unit) over the time the input covers."""
    partial = run.metrics.get("partial_matches", {})
    shared = "shared_nodes" in run.metrics
    expected = None
    if predicted is not None and partial and not shared:
        figures = [predicted[p].get("partial_matches") for p in partial]
        expected = None if any(f is None for f in figures) else sum(figures)
    measured = sum(p["per_window"] for p in partial.values())
    span = run.metrics.get("input_span")
    rows = (total * (span[1] - span[0]) if total is not None and span and span[1] > span[0]
            else None)
    return {"planner": name, "rows_to_matchers": run.metrics["rows_to_matchers"],
            "predicted_rows_to_matchers": None if rows is None else round(rows, 1),
            "partial_matches": round(measured, 4) if partial and not shared else None,
            "predicted_partial_matches": expected,
            "matches": sum(run.metrics["matches"].values()),
            "matches_by_pattern": dict(run.metrics["matches"]),
            "seconds": round(run.seconds, 3)}


def _contexts_measured(aware: Run, alone: Run, workload: Workload) -> dict[str, Any]:
    """Context-aware against context-independent: per pattern the matches of each, and the
    independent matches filtered to the windows their deriving matches open (docs/contexts.md:
    the two must be equal); rows to matchers, wall time, the share of time suspended."""
    from cepplan.engine_adapter.runtime.context_windows import (
        ContextSpec,
        derive_windows,
        keep_match,
    )
    from cepplan.workload.context_model import job_contexts

    spec = ContextSpec.from_json(job_contexts(workload))
    found = aware.matches()
    objects = {name: [json.loads(t) for t in texts] for name, texts in alone.matches().items()}
    windows, counted = derive_windows({n: objects.get(n, []) for n in spec.deriving}, spec)
    suspended = aware.metrics.get("contexts", {}).get("patterns", {})
    patterns = []
    for pattern in workload.patterns:
        name = pattern.name
        if name in spec.deriving:
            kept = counted[name]
        else:
            kept = [o for o in objects.get(name, [])
                    if keep_match(o, spec.contexts_of(name), windows, spec.partition_by)]
        filtered = sorted(_canonical(o) for o in kept)
        patterns.append({
            "pattern": name, "contexts": list(spec.contexts_of(name)),
            "deriving": name in spec.deriving,
            "matches_with_contexts": len(found.get(name, [])),
            "matches_independent": len(objects.get(name, [])),
            "matches_independent_in_windows": len(filtered),
            "equal": filtered == found.get(name, []),
            "suspended_time_share": suspended.get(name, {}).get("suspended_time_share"),
            "expected_active_share": suspended.get(name, {}).get("expected_active_share")})
    return {"runs": [{"variant": "with contexts", **_figures(aware)},
                     {"variant": "context-independent", **_figures(alone)}],
            "patterns": patterns, "matches_equal": all(p["equal"] for p in patterns)}


def _figures(run: Run) -> dict[str, Any]:
    return {"rows_to_matchers": run.metrics["rows_to_matchers"],
            "matches": sum(run.metrics["matches"].values()), "seconds": round(run.seconds, 3)}


def _covering_row(solver: str, run: Run,
                  modelled: Mapping[str, Any] | None) -> dict[str, Any]:
    """One covering solver's measured operator executions with and without reuse, in all and
    per batch beside the modelled executions per batch."""
    metrics = run.metrics.get("covering", {})
    keys = ("selections", "executions_without_reuse", "executions_with_reuse", "saved_share",
            "reused_results", "threshold_violations", "qor_of_reused")
    row = {"solver": solver, **{k: metrics.get(k) for k in keys},
           "seconds": round(run.seconds, 3)}
    solved = metrics.get("solver", {})
    row["solvers_used"] = solved.get("solvers")
    batches = solved.get("batches_solved")
    row["batches"] = batches
    row["with_reuse_per_batch"] = (metrics["executions_with_reuse"] / batches
                                   if batches else None)
    row["predicted_with_reuse_per_batch"] = (modelled or {}).get("executions_with_reuse")
    return row


def _canonical(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True)

