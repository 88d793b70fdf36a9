"""What `--format parquet` must hold, worked out independently of the writer: each match
object of the JSON lines output, parsed, as the row of its pattern's layout (docs/engine.md,
"Matches as Parquet"); times as the input wrote them looked up in the input's own text;
emitted attributes by the reference evaluator (`workload.expr.evaluate.value_of`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from cepplan.workload.expr.evaluate import value_of
from cepplan.workload.model import Workload


def json_matches(out: Path) -> dict[str, list[dict]]:
    """Every match object of a JSON lines run, per pattern."""
    found: dict[str, list[dict]] = {}
    for part in sorted((out / "matches").glob("*.jsonl")):
        for line in part.read_text().splitlines():
            match = json.loads(line)
            found.setdefault(match["pattern"], []).append(match)
    return found


def parquet_rows(out: Path, workload: Workload) -> dict[str, list[dict]]:
    """Every pattern's rows of a Parquet run (each pattern's directory read on its own),
    sorted by their events' ids; the column names of each pattern's first file."""
    rows = {}
    for pattern in workload.patterns:
        table = pq.read_table(out / "matches" / f"pattern={pattern.name}")
        rows[pattern.name] = sorted(table.to_pylist(), key=_identity)
    return rows


def expected_rows(workload: Workload, matches: Mapping[str, list[dict]],
                  time_text: Mapping[float, str] | None) -> dict[str, list[dict]]:
    """Each pattern's rows as the layout makes them from its match objects, sorted as
    `parquet_rows`. `time_text`: the input's time text of each timestamp (None: no
    `time_format`)."""
    return {p.name: sorted((_row(workload, p, m, time_text)
                            for m in matches.get(p.name, [])), key=_identity)
            for p in workload.patterns}


def _row(workload: Workload, pattern, match: dict,
         time_text: Mapping[float, str] | None) -> dict[str, Any]:
    row: dict[str, Any] = {}
    stamps = []
    binding = {}
    for operand in pattern.operands:
        if operand.kind == "negated":
            continue
        var, kleene = operand.var, operand.kind == "kleene"
        bound = match["events"].get(var)
        events = (bound if kleene else [bound]) if bound is not None else None
        if events is not None:
            binding[var] = bound
            stamps += [e["ts"] for e in events]
        nested = workload.is_complex(operand.event_type)
        names = ["id", "ts", *(["time"] if time_text is not None else []),
                 *workload.attributes_of(operand.event_type), *(["match"] if nested else [])]
        for name in names:
            values = None if events is None else [_field(e, name, time_text) for e in events]
            row[f"{var}.{name}"] = values if kleene or values is None else values[0]
    row["first_ts"], row["last_ts"] = min(stamps), max(stamps)
    if time_text is not None:
        row["first_time"], row["last_time"] = time_text[min(stamps)], time_text[max(stamps)]
    kleene_vars = frozenset(o.var for o in pattern.operands if o.kind == "kleene")
    for attr, expr in pattern.emit.items():
        try:
            value = value_of(expr, binding, kleene_vars)
        except KeyError:  # an OR's match binds one variable
            value = None
        row[attr] = None if isinstance(value, float) and math.isnan(value) else value
    return row


def _field(event: dict, name: str, time_text: Mapping[float, str] | None) -> Any:
    if name == "time":
        return time_text[event["ts"]]
    if name == "match":
        return json.dumps({"pattern": event["pattern"], "events": event["events"]})
    return event.get(name)


def _identity(row: dict) -> str:
    """A row's events' ids, which tell its match apart."""
    return json.dumps([row[k] for k in sorted(row) if k.endswith(".id")])
