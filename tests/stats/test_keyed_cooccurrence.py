"""`cepplan stats`' co-occurrence within keys (docs/stats.md, "Keyed statistics") against
candidate tuples counted directly from the event file, key by key."""

from __future__ import annotations

import bisect
import itertools
import json
import random

import pandas as pd
import pytest

from tests.in_process import cepplan

WINDOW = 20.0


def _case(folder, operator: str) -> tuple:
    """Skewed keys, so that many keys lack some type: 3,000 events, 60 keys."""
    rng = random.Random(8)
    lines, ts = ["event,ts,k"], 0.0
    weights = [1 / (i + 1) ** 1.2 for i in range(60)]
    for _ in range(3000):
        ts += rng.expovariate(1.0)
        key = rng.choices(range(60), weights)[0]
        lines.append(f"{rng.choice('AABC')},{ts:.3f},k{key}")
    events = folder / "events.csv"
    events.write_text("\n".join(lines) + "\n")
    workload = folder / "workload.json"
    workload.write_text(json.dumps({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "event",
                   "time_column": "ts", "key_columns": ["k"]},
        "event_types": {t: {"attributes": {"k": "string"}} for t in "ABC"},
        "patterns": [{"name": "p", "structure": [operator, "a:A", "b:B", "c:C"],
                      "partition_by": ["k"], "within": WINDOW}]}))
    return workload, events


def _tuples_per_time(table: pd.DataFrame, types: str, seq: bool) -> float:
    """Tuples, one event per type, in one key, all within the window (in order for SEQ).
    Every member of such a tuple is within the window of its first type's event, so only
    those partners are enumerated (the full product of a busy key is tens of millions)."""
    found = 0
    for _, part in table.groupby("k"):
        times = [sorted(part.loc[part["event"] == t, "ts"]) for t in types]
        for first in times[0]:
            near = [ts[bisect.bisect_left(ts, first - WINDOW):
                       bisect.bisect_right(ts, first + WINDOW)] for ts in times[1:]]
            for tuple_ in itertools.product([first], *near):
                ordered = not seq or all(x < y for x, y in itertools.pairwise(tuple_))
                found += ordered and max(tuple_) - min(tuple_) <= WINDOW
    return found / (table["ts"].max() - table["ts"].min())


@pytest.mark.parametrize("operator", ["AND", "SEQ"])
def test_candidate_tuples_within_keys_match_a_direct_count(tmp_path, operator):
    """Keys lacking a type once counted every earlier key's events as its partners (AND)."""
    workload, events = _case(tmp_path, operator)
    done = cepplan("stats", events, "-w", workload, "-o", tmp_path / "stats.json", "-q")
    assert done.returncode == 0, done.stderr
    measured = json.loads((tmp_path / "stats.json").read_text())["keyed"]["p"]
    tuples = measured["cooccurrence"]["tuples"]
    table = pd.read_csv(events)
    for variables, types in (("a,b", "AB"), ("b,c", "BC"), ("a,b,c", "ABC")):
        expected = _tuples_per_time(table, types, operator == "SEQ")
        assert tuples[variables] == pytest.approx(expected, rel=0.15), variables
