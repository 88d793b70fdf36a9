"""A small context workload over types A, B, C for engine-vs-reference tests: a switch pair,
an initiate/terminate pair, processing patterns with negation and a complex subevent."""

from __future__ import annotations

from typing import Any

import pandas as pd

from cepplan.workload import Workload, build_workload

TYPES = ("A", "B", "C")

PATTERNS: list[dict[str, Any]] = [
    {"name": "rise", "structure": ["SEQ", "a:A", "b:A"], "where": ["a.v < b.v"],
     "partition_by": ["k"], "within": 3},
    {"name": "fall", "structure": ["SEQ", "c:C"], "where": ["c.v <= 1"],
     "partition_by": ["k"], "within": 1},
    {"name": "alert", "structure": ["SEQ", "b:B"], "where": ["b.v >= 4"],
     "partition_by": ["k"], "within": 1},
    {"name": "calm", "structure": ["SEQ", "b:B"], "where": ["b.v == 0"],
     "partition_by": ["k"], "within": 1},
    {"name": "pair", "structure": ["SEQ", "a:A", ["NOT", "x:B"], "c:C"],
     "where": ["x.v >= 2"], "partition_by": ["k"], "within": 4,
     "emit": {"k": "a.k", "s": "a.v + c.v"}},
    {"name": "both", "structure": ["AND", "a:A", "b:B"], "where": ["a.v + b.v > 3"],
     "partition_by": ["k"], "within": 3},
    {"name": "on_top", "structure": ["SEQ", "p:pair", "b:B"], "where": ["b.v < p.s"],
     "partition_by": ["k"], "within": 5},
    {"name": "idle_only", "structure": ["SEQ", "a:A", "c:C"], "partition_by": ["k"],
     "within": 2},
]

CONTEXTS: dict[str, Any] = {
    "partition_by": ["k"],
    "initial": "idle",
    "types": {"idle": {"patterns": ["rise", "alert", "idle_only"]},
              "busy": {"patterns": ["fall", "alert", "pair", "both", "on_top"]},
              "alarm": {"patterns": ["calm", "both"]}},
    "transitions": [
        {"on": "rise", "action": "switch", "from": "idle", "to": "busy"},
        {"on": "fall", "action": "switch", "from": "busy", "to": "idle"},
        {"on": "alert", "action": "initiate", "context": "alarm"},
        {"on": "calm", "action": "terminate", "context": "alarm"},
    ],
}


SOURCE = {"format": "csv", "header": True, "type_column": "type", "time_column": "ts",
          "id_column": "id"}  # the columns `write_csv` writes


def context_workload(contexts: dict[str, Any] | None = None,
                     patterns: list[dict[str, Any]] | None = None) -> Workload:
    """The workload above (or with other contexts/patterns), reading `write_csv`'s files."""
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s", "source": SOURCE,
        "event_types": {t: {"attributes": {"v": "long", "k": "string"}} for t in TYPES},
        "patterns": PATTERNS if patterns is None else patterns,
        "contexts": CONTEXTS if contexts is None else contexts,
    })


def frame(rows: list[tuple]) -> pd.DataFrame:
    """Canonical events from (type, ts, v, k) rows; ids are row positions."""
    return pd.DataFrame({"__type": [r[0] for r in rows], "__ts": [float(r[1]) for r in rows],
                         "__id": list(range(len(rows))), "v": [r[2] for r in rows],
                         "k": [r[3] for r in rows]})


def write_csv(events: pd.DataFrame, path) -> None:
    """`frame`'s events as a CSV file in the workload's `source` layout."""
    events.rename(columns={"__type": "type", "__ts": "ts", "__id": "id"}).to_csv(path,
                                                                                index=False)
