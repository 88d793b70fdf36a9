"""The covering stage against a naive per-query evaluation of the same events."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cepplan.costmodels.interests import region_at
from cepplan.costmodels.qor import precision, recall
from cepplan.engine_adapter.runtime.covering import aggregate
from cepplan.engine_adapter.runtime.covering_run import run_covering
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE


def events(seed: int = 3, n: int = 3000, span: float = 60.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        EVENT_TYPE: rng.choice(["Speed", "Other"], size=n, p=[0.8, 0.2]),
        EVENT_TS: np.sort(rng.uniform(0, span, n)), EVENT_ID: np.arange(n),
        "v": rng.uniform(0, 100, n), "x": rng.uniform(0, 100, n), "y": rng.uniform(0, 100, n)})


def section(solver: str = "cpsat", window=None, track=None) -> dict:
    window = window or {"count": 20}
    def q(name, region, p, r, d=None, neighbors=()):
        qor = {"precision": p, "recall": r} | ({"disparity": d} if d is not None else {})
        return {"id": name, "operator": "avg_v", "region": region, "window": window,
                "qor": qor, "neighbors": list(neighbors)} | ({"track": track}
                                                             if track and name == "a" else {})
    return {"solver": solver, "time_limit": 5.0, "batch": {"time": 10.0},
            "operators": {"avg_v": {"event_type": "Speed", "aggregate": "avg", "attribute": "v",
                                    "x": "x", "y": "y"}},
            "queries": [q("a", [0, 0, 50, 50], 0.5, 0.5, 0.5, ["b", "c"]),
                        q("b", [0, 0, 50, 50], 0.9, 0.9, None, ["a", "c"]),
                        q("c", [5, 0, 50, 50], 0.8, 0.8, None, ["a", "b"]),
                        q("d", [50, 50, 100, 100], 0.5, 0.5, None, ["a"])]}


def naive(frame: pd.DataFrame, spec: dict) -> dict[tuple[str, int, int], np.ndarray]:
    """Each query's windows by a plain loop: (query, batch, window) -> event ids."""
    speed = frame[frame[EVENT_TYPE] == "Speed"].sort_values([EVENT_TS, EVENT_ID])
    out = {}
    for query in spec["queries"]:
        for batch in range(6):
            start = batch * 10.0
            x1, y1, x2, y2 = region_at(query, start)
            rows = speed[(speed[EVENT_TS] >= start) & (speed[EVENT_TS] < start + 10)
                         & speed.x.between(x1, x2) & speed.y.between(y1, y2)]
            ids = rows[EVENT_ID].to_numpy()
            if "count" in query["window"]:
                n = query["window"]["count"]
                for w in range(0, len(ids), n):
                    out[(query["id"], batch, w // n)] = ids[w:w + n]
            else:
                cut = np.floor((rows[EVENT_TS].to_numpy() - start) / query["window"]["time"])
                for w in np.unique(cut):
                    out[(query["id"], batch, int(w))] = ids[cut == w]
    return out


@pytest.mark.parametrize("solver", ["cpsat", "mqc", "mnh", "auto"])
@pytest.mark.parametrize("window", [{"count": 20}, {"time": 2.5}])
def test_every_window_gets_one_result_within_its_thresholds(solver, window):
    frame, spec = events(), section(solver, window)
    run = run_covering(frame, spec)
    truth = naive(frame, spec)
    results = run.results
    keys = list(zip(results["query"], results["batch"], results["window"], strict=True))
    assert sorted(keys) == sorted(truth) and len(set(keys)) == len(keys)
    values = frame.set_index(EVENT_ID)["v"]
    for row in results.itertuples():
        needed = set(truth[(row.query, row.batch, row.window)])
        used = set(truth[(row.served_by, row.batch, row.served_window)])
        assert row.value == pytest.approx(aggregate("avg", values[sorted(used)].to_numpy()))
        assert row.precision == precision(needed, used) and row.recall == recall(needed, used)
        query = next(q for q in spec["queries"] if q["id"] == row.query)
        assert row.precision >= query["qor"]["precision"]
        assert row.recall >= query["qor"]["recall"]
        assert row.disparity >= query["qor"].get("disparity", 0)
        if row.reused:
            served_by = next(q for q in spec["queries"] if q["id"] == row.served_by)
            assert row.query in served_by["neighbors"]
    metrics = run.metrics
    assert metrics["threshold_violations"] == 0
    assert metrics["executions_without_reuse"] == len(truth)
    assert metrics["executions_with_reuse"] == int((~results["reused"]).sum())
    assert metrics["executions_with_reuse"] < len(truth)  # a and b share a region: reuse
    assert metrics["solver"]["batches_solved"] == 6


def test_without_reuse_every_query_gets_its_exact_value():
    frame, spec = events(), section()
    run = run_covering(frame, spec, solver="none")
    assert not run.results["reused"].any()
    assert (run.results[["precision", "recall", "disparity"]] == 1.0).all().all()
    assert run.metrics["executions_with_reuse"] == run.metrics["executions_without_reuse"]


def test_a_moving_interest_follows_its_track_and_changes_its_neighbours():
    track = [[0, 25, 25], [30, 75, 75]]  # a jumps onto d's interest at t = 30
    frame, spec = events(), section(track=track)
    spec["neighbors"] = {"k": 1, "distance": 30}  # re-chosen per batch as interests move
    results = run_covering(frame, spec).results
    assert sorted(naive(frame, spec)) == sorted(zip(results["query"], results["batch"],
                                                    results["window"], strict=True))
    early, late = results[results["batch"] < 3], results[results["batch"] >= 3]
    assert set(early[early["query"] == "d"]["served_by"]) == {"d"}  # nobody within 30
    pair = late[late["query"].isin(["a", "d"])]
    assert set(pair["served_by"]) <= {"a", "d"}
    executed = pair[~pair["reused"]]
    assert len(executed) == len(pair) // 2 and (pair["precision"] == 1.0).all()
