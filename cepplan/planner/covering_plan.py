"""The covering pass (seed 000 §4): the plan's `covering` section — each consumer query with its
processing neighbours, the expected precision, recall and disparity between neighbours, and
the operator executions expected per batch with and without reuse.

Expectations assume events spread evenly over the area the operator's interests span, at the
measured rate of its event type, and windows of neighbours that line up: then the share of a
selection two interests have in common is the share of area they have in common.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cepplan.costmodels.interests import (
    Region,
    area,
    overlap,
    processing_neighbours,
    region_at,
    regions_on_track,
)
from cepplan.costmodels.qor import meets, thresholds
from cepplan.planner.covering import AUTO, CPSAT, fits_budget, instance, solve
from cepplan.planner.deadline import left
from cepplan.planner.deadline import share as share_of
from cepplan.workload.model import ConsumerQuery, Consumers, Statistics, Workload


@dataclass(frozen=True)
class CoveringSettings:
    """Solver for the covering selections (auto, cpsat, mqc, mnh), its time limit per batch in
    seconds, and the seed CP-SAT uses."""

    solver: str = AUTO
    time_limit: float = 10.0
    seed: int = 0


def covering_section(workload: Workload, statistics: Statistics,
                     settings: CoveringSettings, deadline: float = math.inf) -> dict[str, Any]:
    """The `covering` section of `plan.json`; empty when the workload has no consumers. The
    operators' estimates end by `deadline` (`time.perf_counter()` time), in equal shares."""
    consumers = workload.consumers
    if consumers is None or not consumers.queries:
        return {}
    queries = [_query_json(q) for q in consumers.queries]
    start = min((q.track[0][0] for q in consumers.queries if q.track), default=0.0)
    neighbours = processing_neighbours(queries, start, consumers.neighbors_k,
                                       consumers.neighbors_distance)
    for query, chosen in zip(queries, neighbours, strict=True):
        query["neighbors"] = [queries[m]["id"] for m in chosen]
    names = [name for name in consumers.operators if any(q["operator"] == name for q in queries)]
    groups = [_group(name, consumers, queries, statistics, settings,
                     share_of(deadline, len(names) - position))
              for position, name in enumerate(names)]
    known = [g for g in groups if g["expected"] is not None]
    without = sum(g["expected"]["executions_without_reuse"] for g in known)
    with_reuse = sum(g["expected"]["executions_with_reuse"] for g in known)
    return {
        "unit": "operator executions per batch",
        "solver": settings.solver, "time_limit": settings.time_limit, "seed": settings.seed,
        "batch": {"time": consumers.batch_time} if consumers.batch_time else None,
        "neighbors": {"k": consumers.neighbors_k, "distance": consumers.neighbors_distance},
        "operators": {name: {"event_type": op.event_type, "aggregate": op.aggregate,
                             "attribute": op.attribute, "x": op.x, "y": op.y, "cost": op.cost}
                      for name, op in consumers.operators.items()},
        "queries": queries,
        "groups": groups,
        "expected": {"executions_without_reuse": without, "executions_with_reuse": with_reuse,
                     "saved_share": 1 - with_reuse / without if without else 0.0},
    }


def covering_lines(section: Mapping[str, Any]) -> list[str]:
    """What `cepplan optimize` prints about consumer queries: reuse expected per operator."""
    if not section:
        return []
    lines = [f"consumer queries: {len(section['queries'])}; covering solver {section['solver']}, "
             f"{section['time_limit']:g} s per batch"]
    for group in section["groups"]:
        expected = group["expected"]
        if expected is None:
            lines.append(f"  {group['operator']}: {group.get('note', '')}")
            continue
        lines.append(
            f"  {group['operator']}: {len(group['queries'])} queries, about "
            f"{expected['executions_without_reuse']:.3g} operator executions per batch without "
            f"reuse, {expected['executions_with_reuse']:.3g} with reuse (saving "
            f"{100 * expected['saved_share']:.0f}%); the operator runs on the selections of "
            f"{', '.join(expected['covering_queries'])}")
        if "note" in group:
            lines.append(f"    note: {group['note']}")
    return lines


def expected_qor(own: Region, used: Region) -> tuple[float, float, float]:
    """Expected precision, recall and disparity when a query with interest `own` receives the
    result computed over interest `used`, events spread evenly (eq. 1–3 in expectation)."""
    shared = overlap(own, used)
    p = shared / area(used) if area(used) else float(own == used)
    r = shared / area(own) if area(own) else float(own == used)
    return p, r, 1.0 if own == used else (1 + p) / 2


def _group(name: str, consumers: Consumers, queries: list[dict[str, Any]],
           statistics: Statistics, settings: CoveringSettings,
           deadline: float = math.inf) -> dict[str, Any]:
    """One operator's queries: neighbour pairs with their expected QoR at the start, and the
    expected executions per batch averaged over the times the interests move — over those
    estimated by `deadline` when it cuts them short, taken spread over the whole track."""
    operator = consumers.operators[name]
    mine = [n for n, q in enumerate(queries) if q["operator"] == name]
    times = sorted({p[0] for n in mine for p in queries[n].get("track", ())}) or [0.0]
    rate = statistics.rates.get(operator.event_type)
    group: dict[str, Any] = {"operator": name, "queries": [queries[n]["id"] for n in mine],
                             "pairs": _pairs(mine, queries, times[0]), "expected": None}
    if rate is None:
        group["note"] = (f"no rate for {operator.event_type}: expected executions not "
                         "estimated")
        return group
    span = _span([region for n in mine for region in regions_on_track(queries[n])])
    density = rate / area(span) if area(span) else 0.0
    batch = consumers.batch_time or 1.0
    limits = (consumers.neighbors_k, consumers.neighbors_distance)
    estimates = []
    for done, index in enumerate(_spread(len(times))):
        if time.perf_counter() >= deadline:
            break
        per_batch = min(settings.time_limit, left(deadline) / (len(times) - done))
        estimates.append(_estimate(mine, queries, times[index], limits, density, batch,
                                   operator.cost, replace(settings, time_limit=per_batch)))
    if not estimates:
        group["note"] = "expected executions not estimated: the time limit was reached first"
        return group
    without = sum(e[0] for e in estimates) / len(estimates)
    with_reuse = sum(e[1] for e in estimates) / len(estimates)
    group["expected"] = {
        "density": density, "selections_per_batch": without,
        "executions_without_reuse": without, "executions_with_reuse": with_reuse,
        "saved_share": 1 - with_reuse / without if without else 0.0,
        "solver": estimates[0][2], "covering_queries": estimates[0][3]}
    notes = []
    if len(estimates) < len(times):
        group["expected"]["estimated_times"] = {"estimated": len(estimates), "of": len(times)}
        notes.append(f"the time limit let {len(estimates)} of the {len(times)} times the "
                     "interests move be estimated")
    if settings.solver == CPSAT and not fits_budget(round(estimates[0][4]),
                                                    settings.time_limit):
        notes.append(f"batches of about {without:.0f} selections may exceed what CP-SAT "
                     f"settles in {settings.time_limit:g} s; the engine then takes the "
                     "greedy cover and counts it")
    if notes:
        group["note"] = "; ".join(notes)
    return group


def _spread(count: int) -> list[int]:
    """0 .. count-1 in bit-reversed order (0, 64, 32, 96, ... for 120): every first few are
    spread over the whole range, so estimates cut short by the time limit still cover it."""
    bits = max(1, (count - 1).bit_length())
    reversed_ = (int(f"{i:0{bits}b}"[::-1], 2) for i in range(1 << bits))
    return [i for i in reversed_ if i < count]


def _pairs(mine: list[int], queries: list[dict[str, Any]], when: float) -> list[dict]:
    out = []
    index = {q["id"]: m for m, q in enumerate(queries)}
    regions: dict[int, Region] = {}  # each query's interest at `when`, found once
    for n in mine:
        for other in queries[n]["neighbors"]:
            m = index[other]
            for query in (m, n):
                if query not in regions:
                    regions[query] = region_at(queries[query], when)
            p, r, d = expected_qor(regions[m], regions[n])
            out.append({"server": queries[n]["id"], "served": other, "precision": p,
                        "recall": r, "disparity": d,
                        "meets_thresholds": meets(p, r, d, thresholds(queries[m]))})
    return out


def _estimate(mine: list[int], queries: list[dict[str, Any]], when: float,
              limits: tuple[int | None, float | None], density: float, batch: float,
              cost: float, settings: CoveringSettings) -> tuple:
    """(executions without reuse, with reuse, solver, covering query ids) at time `when`:
    the set cover over queries, each weighted by its expected selections per batch."""
    regions = {n: region_at(queries[n], when) for n in mine}
    selections = [_selections(queries[n]["window"], density * area(regions[n]), batch)
                  for n in mine]
    position = {n: i for i, n in enumerate(mine)}
    neighbours = processing_neighbours(queries, when, *limits)
    serves = [{position[m] for m in neighbours[n] if m in position
               and meets(*expected_qor(regions[m], regions[n]), thresholds(queries[m]))}
              for n in mine]
    weights = [max(s, 1e-6) * cost for s in selections]
    result = solve(instance(serves, list(range(len(mine))), weights), settings.solver,
                   settings.time_limit, settings.seed)
    with_reuse = sum(selections[j] for j in result.chosen)
    entries = sum(selections[i] * (1 + len(serves[i])) for i in range(len(mine)))
    return (sum(selections), with_reuse, result.solver,
            [queries[mine[j]]["id"] for j in result.chosen], entries)


def _selections(window: dict[str, Any], per_time: float, batch: float) -> float:
    """Expected non-empty windows per batch for a query seeing `per_time` events per time unit
    (windows are cut within a batch, so a window longer than the batch ends with it)."""
    if "count" in window:
        return per_time * batch / window["count"]
    width = min(window["time"], batch)
    return batch / width * (1 - math.exp(-per_time * width))


def _span(regions: list[Region]) -> Region:
    return (min(r[0] for r in regions), min(r[1] for r in regions),
            max(r[2] for r in regions), max(r[3] for r in regions))


def _query_json(query: ConsumerQuery) -> dict[str, Any]:
    window = ({"count": query.window_count} if query.window_count is not None
              else {"time": query.window_time})
    qor = {"precision": query.precision, "recall": query.recall}
    if query.disparity is not None:
        qor["disparity"] = query.disparity
    out = {"id": query.id, "operator": query.operator, "region": list(query.region),
           "window": window, "qor": qor}
    if query.track:
        out["track"] = [list(point) for point in query.track]
    return out
