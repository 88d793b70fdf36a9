"""The Spark match stage's side of the shared plan (seed 004 §3.1, §5; docs/matching.md).

Shipped in the job's runtime zip. Users of one shared node have the same key (the runtime
proves it), so they are in one partition scheme and their events in the same key-hash ×
time-range groups. In a group, each sharing group's patterns (those linked through shared
nodes; a pattern may use several) are evaluated together over the rows any of them acquired,
per key, by `shared_plan.evaluate_group` — the function the local engine uses — so a node's
partial matches are computed once and fed to its users. With contexts, each member's rows
were already pushed down to its windows and its matches are kept by the context stage
afterwards (`spark.contexts`), exactly as for a pattern evaluated alone. Partial
matches travel back in the match stage's accumulator (no extra pass over the matches);
`shared_nodes` in metrics.json is then built by the same code as the local engine's.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.context_windows import ContextSpec
from cepplan.engine_adapter.runtime.contexts import built_from, has_contexts
from cepplan.engine_adapter.runtime.job import Job, job_from_json, partitions
from cepplan.engine_adapter.runtime.shared_nodes import SharingPlan, sharing_plan
from cepplan.engine_adapter.runtime.shared_plan import evaluate_group, node_summaries
from cepplan.workload.columns import EVENT_TS

_PARTIALS, _SPAN = "partials", "span"


def job_sharing(job: Job) -> SharingPlan | None:
    """The job's usable shared nodes, or None when nothing is shared. With contexts, the
    deriving patterns (and those they are built from) are evaluated alone, first, by the
    context stage, as in the local engine; the others share with their context windows
    applied (push-down before acquisition, the held matches after)."""
    plan = sharing_plan(job, alone=deriving(job))
    return plan if plan.uses else None


def deriving(job: Job) -> set[str]:
    """The patterns the context stage evaluates first and alone (none without contexts)."""
    if not has_contexts(job):
        return set()
    return built_from(ContextSpec.from_json(job.data["contexts"]).deriving, job)


def evaluate_shared(cache: MutableMapping[str, Any], job: Job, group: pd.DataFrame,
                    flags: Mapping[str, str], own: tuple[float, float],
                    found: MutableMapping[tuple[str, str], int], output: Any,
                    where: str) -> tuple[set[str], list]:
    """In one match group of a scheme, the patterns of `flags` (name -> acquired-row flag
    column) that belong to a sharing group, evaluated together; their counts and each
    node's partial matches added to `found`. Returns the names done, which the caller
    skips, and their output batches: as the stage outputs a pattern alone (`output`,
    `spark.match._Output`, whose part files are named by the group, `where`)."""
    if "sharing" not in cache:
        cache["sharing"] = job_sharing(job)
    plan: SharingPlan | None = cache["sharing"]
    if plan is None:
        return set(), []
    if "groups" not in cache:
        cache["groups"] = plan.groups()
    done: set[str] = set()
    batches: list = []
    for members in cache["groups"]:
        names = [n for n in members if n in flags]
        if not names:
            continue
        rows = np.logical_or.reduce([group[flags[n]].to_numpy(dtype=bool) for n in names])
        counts = dict.fromkeys(names, 0)
        caps = dict.fromkeys(names, 0)
        held = dict.fromkeys(names, 0)
        partials: dict[int, int] = {}
        for events in partitions(group[rows], job.pattern(names[0]).partition_by):
            result = evaluate_group(events, job, plan, names, own=own,
                                    with_complex=[n for n in names if n in output.consumed],
                                    acquired={n: flags[n] for n in names})
            for node, count in result.partials.items():
                partials[node] = partials.get(node, 0) + count
            for name, out in result.outputs.items():
                counts[name] += out.count
                caps[name] += out.cap_hits
                held[name] += out.held_back
                batches.extend(output.write(name, out, where))
        for name in names:
            found[("matches", name)] = counts[name]
            found[("cap", name)] = caps[name]
            found[("held", name)] = held[name]
        for node, count in partials.items():
            found[(_PARTIALS, str(node))] = count
        done.update(names)
    return done, batches


def note_span(counts, pool, job: Job) -> None:
    """When the job shares, add the tagged rows' time span to the match stage's accumulator
    (added once, on the driver): `per_window` is measured over it, as the local engine's.
    One aggregate over the cached tagged rows."""
    if job_sharing(job) is None:
        return
    row = pool.selectExpr(f"min(`{EVENT_TS}`)", f"max(`{EVENT_TS}`)").first()
    if row is not None and row[0] is not None:
        counts.add({(_SPAN, "first"): float(row[0]), (_SPAN, "last"): float(row[1])})


def shared_metrics(counts: Mapping[tuple[str, str], Any], data: Mapping[str, Any]) -> dict:
    """metrics.json's `shared_nodes` (as the local engine's) and `sharing_unused` (users the
    plan names that run alone, and why), or nothing when the job shares nothing."""
    if not (data.get("sharing") or {}).get("shared"):
        return {}
    job = job_from_json(data)
    plan = job_sharing(job)
    unused = unused_users(job, plan)
    if plan is None:
        return {"sharing_unused": unused} if unused else {}
    partials = {int(k): v for (kind, k), v in counts.items() if kind == _PARTIALS}
    span = counts.get((_SPAN, "last"), 0.0) - counts.get((_SPAN, "first"), 0.0)
    out: dict[str, Any] = {"shared_nodes": node_summaries(plan, partials, span)}
    if unused:
        out["sharing_unused"] = unused
    return out


def unused_users(job: Job, plan: SharingPlan | None) -> list[dict[str, str]]:
    """The plan's shared-node users evaluated alone, each with the reason."""
    named = [n for entry in (job.data.get("sharing") or {}).get("shared", ())
             for n in entry.get("users", {})]
    uses = {} if plan is None else plan.uses
    out = []
    for name in dict.fromkeys(named):
        if name in uses:
            continue
        out.append({"pattern": name, "reason": _reason(job, name)})
    return out


def _reason(job: Job, name: str) -> str:
    if name in deriving(job):
        return ("it opens or closes contexts (or feeds a pattern that does): evaluated "
                "alone, first")
    try:
        spec = job.pattern(name)
    except KeyError:
        return "not a pattern of this job"
    if spec.operator == "OR":
        return "OR patterns are evaluated alone"
    if spec.window is None:
        return "patterns without a window are evaluated alone"
    if any(job.is_complex(o.type) for o in spec.operands):
        return "patterns over other patterns' matches are evaluated alone"
    entries = [e.get("users", {}) for e in job.data["sharing"]["shared"]]
    names = {s.name for s in job.patterns}
    others = {job.pattern(n).partition_by for users in entries if name in users
              for n in users if n != name and n in names}
    if others and spec.partition_by not in others:
        return "its key (partition_by) differs from the other users': another partition scheme"
    return ("its part of the pattern is not the shared subtree (types, order or conditions), "
            "or no other pattern could share it")
