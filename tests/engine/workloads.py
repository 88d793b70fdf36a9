"""Small workloads covering every operator and feature, for matcher-vs-reference tests."""

from __future__ import annotations

from typing import Any

from cepplan.workload import Workload, build_workload

TYPES = ("A", "B", "C")


CSV_SOURCE = {"format": "csv", "header": True, "type_column": "kind", "time_column": "ts",
              "id_column": "id"}  # the columns `write_events` writes the test frames with


def workload(patterns: list[dict[str, Any]], *, seq_ties: str = "strict",
             kleene_cap: int = 16, csv: bool = False) -> Workload:
    """A workload over types A, B, C (attributes v: long, w: double, k: string); with `csv`,
    read from a CSV file of the test frames' columns."""
    return build_workload({
        "format": "cepplan.workload/1",
        "time_unit": "s",
        **({"source": CSV_SOURCE} if csv else {}),
        "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                        for t in TYPES},
        "options": {"seq_ties": seq_ties, "kleene_cap": kleene_cap},
        "patterns": patterns,
    })


TEMPLATES: dict[str, list[dict[str, Any]]] = {
    "seq_join_filter": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                         "where": ["a.v < b.v", "c.v > 1"], "within": 4}],
    "seq_same_type": [{"name": "p", "structure": ["SEQ", "a:A", "b:A", "c:A"],
                       "where": ["a.v <= b.v"], "within": 3}],
    "and_keyed": [{"name": "p", "structure": ["AND", "a:A", "b:B", "c:A"],
                   "where": ["a.v + b.v > 3"], "partition_by": ["k"], "within": 3}],
    "or_filter": [{"name": "p", "structure": ["OR", "a:A", "b:B"], "where": ["a.v > 2"]}],
    "kleene_vshape": [{"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
                       "where": ["a.v <= b.v", "b.v <= NEXT(b.v)", "c.v <= FIRST(b.v)"],
                       "within": 6}],
    "kleene_and_last": [{"name": "p", "structure": ["AND", ["KLEENE", "b:B"], "a:A"],
                         "where": ["LAST(b.v) >= a.v", "b.w < 3.5"], "within": 3}],
    "kleene_alone": [{"name": "p", "structure": ["SEQ", ["KLEENE", "b:B"]],
                      "where": ["b.v < NEXT(b.v)"], "within": 2}],
    "two_kleene": [{"name": "p", "structure": ["SEQ", ["KLEENE", "a:A"], ["KLEENE", "b:B"]],
                    "where": ["a.v < b.v", "FIRST(a.w) <= LAST(b.w)"], "within": 3}],
    "not_start": [{"name": "p", "structure": ["SEQ", ["NOT", "x:B"], "a:A", "c:C"],
                   "where": ["x.v > a.v"], "within": 3}],
    "not_middle": [{"name": "p", "structure": ["SEQ", "a:A", ["NOT", "x:B"], "c:A"],
                    "where": ["x.v >= 2"], "within": 4}],
    "not_end": [{"name": "p", "structure": ["SEQ", "a:A", "c:C", ["NOT", "x:B"]],
                 "where": ["x.v == c.v"], "within": 3}],
    "not_and": [{"name": "p", "structure": ["AND", "a:A", ["NOT", "x:C"], "b:B"],
                 "where": ["x.w > a.w"], "within": 2}],
    "not_kleene": [{"name": "p", "structure": ["SEQ", ["KLEENE", "b:B"], ["NOT", "x:A"], "c:C"],
                    "where": ["x.v < b.v"], "within": 4}],
    "hierarchy": [{"name": "low", "structure": ["SEQ", "a:A", "b:B"], "where": ["a.v < b.v"],
                   "within": 3, "emit": {"s": "a.v + b.v", "k": "a.k"}},
                  {"name": "high", "structure": ["SEQ", "p:low", "c:C"],
                   "where": ["c.v < p.s"], "partition_by": ["k"], "within": 4}],
}
