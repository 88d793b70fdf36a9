"""The bundled examples with users' free text replaced by hostile text: the workload's name, a
context's name, a predicate's string literal, a consumer operator's name and a query's id —
the texts the schema lets through unchecked, which every output must show as written."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import EXAMPLES


def example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / name / "workload.json").read_text())


def traffic_named(name: str, context: str, literal: str) -> dict[str, Any]:
    """The traffic example named `name`, its context "congestion" named `context`, the toll
    pattern's lane literal `'exit'` replaced by `literal`."""
    raw = example("traffic")
    raw["name"] = name
    contexts = raw["contexts"]
    contexts["types"][context] = contexts["types"].pop("congestion")
    for transition in contexts["transitions"]:
        for key in ("from", "to", "context"):
            if transition.get(key) == "congestion":
                transition[key] = context
    toll = next(p for p in raw["patterns"] if p["name"] == "toll")
    toll["where"][1] = f"p2.lane != {quoted(literal)}"
    return raw


def mobile_named(name: str, operator: str, query: str) -> dict[str, Any]:
    """The mobile example named `name`, its operator named `operator`, its first query
    `query`."""
    raw = example("mobile")
    raw["name"] = name
    operators = raw["consumers"]["operators"]
    operators[operator] = operators.pop("avg_speed")
    for entry in raw["consumers"]["queries"]:
        entry["operator"] = operator
    raw["consumers"]["queries"][0]["id"] = query
    return raw


def shared_named(name: str, literal: str) -> dict[str, Any]:
    """Two patterns whose common subtree (a, b) the evaluation search shares, its condition
    holding `literal`: the report's sharing table quotes it as code."""
    condition = f"a.s != {quoted(literal)}"
    return {
        "format": "cepplan.workload/1", "name": name, "time_unit": "s",
        "event_types": {"A": {"attributes": {"x": "double", "s": "string"}},
                        "B": {"attributes": {"x": "double"}},
                        "C": {"attributes": {"x": "double"}},
                        "D": {"attributes": {"x": "double"}}},
        "patterns": [{"name": f"p_{last}", "structure": ["SEQ", "a:A", "b:B", f"z:{last}"],
                      "where": [condition, "a.x < b.x"], "within": "10s"}
                     for last in ("C", "D")],
        "statistics": {"rates": {"A": 2, "B": 2, "C": 50, "D": 50}}}


def quoted(text: str) -> str:
    """`text` as a string literal of the predicate language."""
    quote = "'" if "'" not in text else '"'
    assert quote not in text, text
    return f"{quote}{text}{quote}"
