"""The engine's covering stage as plain functions over pandas frames (seed 000 §4.1).

Per batch and operator: `selections` cuts each query's events (its operator's type, inside its
region at the batch start) into its windows; `reuse_pairs` finds which selection may serve
which within the served query's thresholds; a solver (passed in, so the cover can be solved on
the driver) picks the covering selections; `deliver` computes each operator once per covering
selection and hands the result to every selection it serves, with the measured precision,
recall and disparity. Reads the plan's `covering` section as plain data (dicts and lists).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from cepplan.costmodels.interests import processing_neighbours, region_at
from cepplan.costmodels.qor import disparity, meets, precision_recall, thresholds
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

AGGREGATES = ("avg", "sum", "count", "min", "max")


@dataclass(frozen=True)
class Selection:
    """One query's window within one batch: the positions of its events in the group frame."""

    batch: int
    query: int
    window: int
    rows: np.ndarray  # positions into the group's event frame, in (ts, id) order


@dataclass(frozen=True)
class Group:
    """One batch of one operator: its events (ts, id order) and the selections over them."""

    batch: int
    operator: str
    events: pd.DataFrame
    selections: tuple[Selection, ...]
    start: float  # the batch's start: interests and time windows are placed from it


def groups(events: pd.DataFrame, section: Mapping[str, Any]) -> list[Group]:
    """Every (batch, operator) group with its selections; batches are [k B, (k+1) B) of the
    section's batch length B, or the whole stream when it has none."""
    batch_length = (section.get("batch") or {}).get("time")
    queries = section["queries"]
    out = []
    for name, operator in section["operators"].items():
        mine = [index for index, q in enumerate(queries) if q["operator"] == name]
        if not mine:
            continue
        frame = events[events[EVENT_TYPE] == operator["event_type"]]
        frame = frame.sort_values([EVENT_TS, EVENT_ID], kind="stable")
        batch_of = (np.floor(frame[EVENT_TS].to_numpy() / batch_length).astype(np.int64)
                    if batch_length else np.zeros(len(frame), dtype=np.int64))
        for batch in np.unique(batch_of):
            part = frame[batch_of == batch].reset_index(drop=True)
            start = batch * batch_length if batch_length else float(part[EVENT_TS].iloc[0])
            chosen = [s for q in mine for s in _windows(part, operator, queries[q], q,
                                                       int(batch), start)]
            out.append(Group(int(batch), name, part, tuple(chosen), float(start)))
    return out


def reuse_pairs(group: Group, section: Mapping[str, Any]) -> list[set[int]]:
    """Per selection j, the selections it may serve: those of queries j's query may serve
    (its processing neighbours) whose precision, recall and disparity thresholds hold when
    they receive j's result (seed 000 Fig. 4, line 8)."""
    queries = section["queries"]
    operator = section["operators"][group.operator]
    selections = group.selections
    start = group.start
    sizes = np.array([s.rows.size for s in selections])
    rows = np.concatenate([s.rows for s in selections]) if selections else np.zeros(0, int)
    members = sparse.csr_matrix((np.ones(rows.size), (np.repeat(np.arange(len(selections)),
                                                                sizes), rows)),
                                shape=(len(selections), len(group.events)))
    common = (members @ members.T).tocoo()
    neighbours = batch_neighbours(section, start)
    by_query: dict[int, list[int]] = {}
    for i, s in enumerate(selections):
        by_query.setdefault(s.query, []).append(i)
    xs = group.events[operator["x"]].to_numpy(dtype=float)
    ys = group.events[operator["y"]].to_numpy(dtype=float)
    serves: list[set[int]] = [set() for _ in selections]
    candidates = {(int(j), int(i)): int(c) for j, i, c in zip(common.row, common.col,
                                                              common.data, strict=True)}
    for j, server in enumerate(selections):  # thresholds of 0 accept disjoint selections too
        for other in neighbours[server.query]:
            if thresholds(queries[other])[:2] == (0, 0):
                candidates.update({(j, i): candidates.get((j, i), 0)
                                   for i in by_query.get(other, ())})
    for (j, i), shared in candidates.items():
        server, served = selections[j], selections[i]
        if served.query not in neighbours[server.query]:
            continue
        used, needed = sizes[j], sizes[i]
        p = shared / used if used else 1.0
        r = shared / needed if needed else 1.0
        limits = thresholds(queries[served.query])
        d = 1.0
        if limits[2] is not None:
            d = disparity(xs[server.rows], ys[server.rows],
                          _interests(queries, served.query, server.query, start))
        if meets(p, r, d, limits):
            serves[j].add(i)
    return serves


def cover_inputs(group: Group, section: Mapping[str, Any]) -> tuple[list[set[int]], list[int],
                                                                   list[int]]:
    """What a cover instance needs for one group: who may serve whom, each selection's query,
    and each query's number of processing neighbours in this batch (MNH's priority)."""
    start = group.start
    neighbours = batch_neighbours(section, start)
    priority = [len(neighbours[n]) for n in range(len(section["queries"]))]
    return reuse_pairs(group, section), [s.query for s in group.selections], priority


def batch_neighbours(section: Mapping[str, Any], when: float) -> dict[int, set[int]]:
    """Per query, the queries it may serve in the batch starting at `when`: re-chosen from the
    plan's k and distance when interests move, else the plan's lists."""
    queries = section["queries"]
    if any(q.get("track") for q in queries):
        limits = section.get("neighbors") or {}
        chosen = processing_neighbours(queries, when, limits.get("k"), limits.get("distance"))
        return {n: set(m) for n, m in enumerate(chosen)}
    index = {q["id"]: n for n, q in enumerate(queries)}
    return {n: {index[other] for other in q.get("neighbors", ())}
            for n, q in enumerate(queries)}


def deliver(group: Group, assignment: Sequence[int], section: Mapping[str, Any],
            complexity: int = 1) -> pd.DataFrame:
    """Execute the operator once per covering selection (`complexity` times, to emulate
    costlier operators) and give every selection the result of the selection serving it, with
    the measured precision, recall and disparity."""
    queries = section["queries"]
    operator = section["operators"][group.operator]
    values = (group.events[operator["attribute"]].to_numpy(dtype=float)
              if operator.get("attribute") else np.ones(len(group.events)))
    xs = group.events[operator["x"]].to_numpy(dtype=float)
    ys = group.events[operator["y"]].to_numpy(dtype=float)
    ids = group.events[EVENT_ID].to_numpy()
    ts = group.events[EVENT_TS].to_numpy()
    start = group.start
    results: dict[int, float] = {}
    for server in sorted(set(assignment)):
        for _ in range(complexity):
            results[server] = aggregate(operator["aggregate"], values[group.selections[server]
                                                                      .rows])
    records = []
    for i, selection in enumerate(group.selections):
        server = group.selections[assignment[i]]
        needed, used = np.sort(ids[selection.rows]), np.sort(ids[server.rows])
        p, r = precision_recall(needed, used)
        d = disparity(xs[server.rows], ys[server.rows],
                      _interests(queries, selection.query, server.query, start))
        records.append({
            "batch": group.batch, "operator": group.operator,
            "query": queries[selection.query]["id"], "window": selection.window,
            "window_start": float(ts[selection.rows].min()),
            "window_end": float(ts[selection.rows].max()), "events": int(selection.rows.size),
            "value": results[assignment[i]], "served_by": queries[server.query]["id"],
            "served_window": server.window, "reused": assignment[i] != i,
            "precision": p, "recall": r, "disparity": d,
            "meets_thresholds": meets(p, r, d, thresholds(queries[selection.query])),
        })
    return pd.DataFrame.from_records(records)


def aggregate(name: str, values: np.ndarray) -> float:
    """avg, sum, count, min or max of a selection's attribute values."""
    if name == "count":
        return float(values.size)
    if name == "sum":
        return float(values.sum())
    if values.size == 0:
        return float("nan")
    return float({"avg": np.mean, "min": np.min, "max": np.max}[name](values))


def _windows(part: pd.DataFrame, operator: Mapping[str, Any], query: Mapping[str, Any],
             index: int, batch: int, start: float) -> list[Selection]:
    """The query's non-empty windows in one batch: count windows of N consecutive events in its
    region (the last one may be shorter), or time windows [start + w W, start + (w+1) W)."""
    x1, y1, x2, y2 = region_at(query, start)
    xs, ys = part[operator["x"]].to_numpy(dtype=float), part[operator["y"]].to_numpy(dtype=float)
    rows = np.flatnonzero((xs >= x1) & (xs <= x2) & (ys >= y1) & (ys <= y2))
    window = query["window"]
    if "count" in window:
        cut = np.arange(rows.size) // int(window["count"])
    else:
        cut = np.floor((part[EVENT_TS].to_numpy()[rows] - start) / window["time"]).astype(int)
    return [Selection(batch, index, int(w), rows[cut == w]) for w in np.unique(cut)]


def _interests(queries: Sequence[Mapping[str, Any]], served: int, server: int,
               when: float) -> list[tuple[float, float, float, float]]:
    """The distinct spatial interests behind a delivered result: the consumer's own and the
    one whose selection was executed (Iu of seed 000 eq. 3)."""
    own, used = region_at(queries[served], when), region_at(queries[server], when)
    return [own] if own == used else [own, used]
