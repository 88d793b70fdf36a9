"""The matcher's partial-match counter (metrics.json `partial_matches`) against brute force: the
distinct bindings of each prefix of the join order that satisfy the window, the SEQ order and
the conditions among the bound variables, whatever the chunk size and the owned ranges."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from cepplan.engine_adapter.runtime.job import evaluate_partition, job_from_json
from cepplan.engine_adapter.runtime.matcher import partials_per_window
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

WINDOW = 3.0


def _job(operator: str, order: list[str]) -> dict:
    operands = [{"var": v, "type": t, "kind": "plain", "position": i}
                for i, (v, t) in enumerate((("a", "A"), ("b", "B"), ("c", "A")))]
    return {"format": "cepplan.job/1", "options": {}, "types": {"A": ["x"], "B": ["x"]},
            "patterns": [{"name": "p", "operator": operator, "operands": operands,
                          "predicates": [{"text": "a.x < b.x",
                                          "tree": ["<", ["attr", "a", "x"],
                                                   ["attr", "b", "x"]]},
                                         {"text": "c.x > 2",
                                          "tree": [">", ["attr", "c", "x"], ["lit", 2]]}],
                          "window": WINDOW, "partition_by": [], "order": order,
                          "steps": [["a", "b", "c"]], "emit": {}, "emit_types": {}}]}


def _events(seed: int, n: int = 70) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.uniform(0, 40, n).round(1))  # ties happen
    return pd.DataFrame({EVENT_TYPE: rng.choice(["A", "B"], n), EVENT_TS: ts,
                         EVENT_ID: np.arange(n), "x": rng.integers(0, 6, n).astype(float)})


def _brute_force(events: pd.DataFrame, operator: str, order: list[str]) -> list[int]:
    """Per prefix of `order`, the bindings of distinct events to its variables that hold."""
    types = {"a": "A", "b": "B", "c": "A"}
    position = {"a": 0, "b": 1, "c": 2}
    rows = events.to_dict("records")
    counts = []
    for k in range(1, len(order) + 1):
        prefix = order[:k]
        count = 0
        candidates = [[e for e in rows if e[EVENT_TYPE] == types[v]] for v in prefix]
        for chosen in itertools.product(*candidates):
            if len({e[EVENT_ID] for e in chosen}) < k:
                continue  # one event binds one variable
            bound = dict(zip(prefix, chosen, strict=True))
            stamps = [e[EVENT_TS] for e in chosen]
            if max(stamps) - min(stamps) > WINDOW:
                continue
            if operator == "SEQ" and any(bound[u][EVENT_TS] >= bound[v][EVENT_TS]
                                         for u in bound for v in bound
                                         if position[u] < position[v]):
                continue
            if {"a", "b"} <= set(bound) and not bound["a"]["x"] < bound["b"]["x"]:
                continue
            if "c" in bound and not bound["c"]["x"] > 2:
                continue
            count += 1
        counts.append(count)
    return counts


@pytest.mark.parametrize(("operator", "order", "seed"), [
    ("SEQ", ["a", "b", "c"], 1), ("SEQ", ["c", "a", "b"], 2), ("AND", ["b", "c", "a"], 3),
    ("AND", ["a", "b", "c"], 4)])
def test_partial_matches_equal_brute_force_for_any_chunks_and_ranges(operator, order, seed):
    job = job_from_json(_job(operator, order))
    spec = job.pattern("p")
    events = _events(seed)
    expected = _brute_force(events, operator, order)
    assert expected[1] > 0  # the test sees partial matches of two events
    whole = evaluate_partition(events, job, spec, chunk_events=4096)
    assert whole.partials[:len(expected)] == expected
    chunked = evaluate_partition(events, job, spec, chunk_events=7)
    assert chunked.partials == whole.partials
    assert chunked.count == whole.count
    cut = float(events[EVENT_TS].iloc[35])  # two owned ranges, each seeing a window before
    first = evaluate_partition(events, job, spec, own=(-math.inf, cut), chunk_events=9)
    second = evaluate_partition(events[events[EVENT_TS] >= cut - WINDOW], job, spec,
                                own=(cut, math.inf), chunk_events=9)
    added = [x + y for x, y in itertools.zip_longest(first.partials, second.partials,
                                                      fillvalue=0)]
    assert added[:len(expected)] == expected


def test_partials_per_window_inverts_the_creation_rate():
    """n_k partial matches of k events built over a span: n_k·W/(span·k) alive per window."""
    assert partials_per_window([100, 60], 2.0, 50.0) == pytest.approx(100 * 2 / 50 + 60 * 2 / 100)
    assert partials_per_window([5], 1.0, 0.0) == 0.0
