"""Attributes named like the fields every event has in the matches (`id`, `type`, `ts`): an
attribute `id` used to overwrite the event's own id in the JSON lines written, silently; now it
is allowed only as `source.id_column` (the events' ids, written once) and refused otherwise."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.in_process import cepplan

ROWS = "type,ts,id,amount\nA,1,70,5\nB,2,71,6\nA,3,90,7\nB,4,95,1\n"


def _workload(attributes: dict[str, str], source: dict[str, str]) -> dict:
    return {"format": "cepplan.workload/1", "name": "ids", "time_unit": "s",
            "source": {"format": "csv", "type_column": "type", **source},
            "event_types": {"A": {"attributes": attributes}, "B": {"attributes": attributes}},
            "patterns": [{"name": "ab", "structure": ["SEQ", "a:A", "b:B"],
                          "where": ["a.amount < b.amount"], "within": 10}],
            "statistics": {"rates": {"A": 1, "B": 1}}}


@pytest.mark.parametrize("name", ["id", "type", "ts"])
def test_an_attribute_named_like_an_event_field_is_refused(tmp_path, name):
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(_workload({name: "long", "amount": "long"}, {})))
    result = cepplan("validate", workload)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 2  # one per event type declaring it
    assert all(f"attributes.{name}" in line and "reserved" in line for line in lines)


def test_an_id_attribute_that_is_the_id_column_is_the_events_own_id(tmp_path):
    """JSON lines: one "id" per event, the column's value (70, 71...), not the row position;
    Parquet: one `a.id` column of those ids; `a.id` reads in predicates as an attribute."""
    workload = tmp_path / "w.json"
    spec = _workload({"id": "long", "amount": "long"}, {"id_column": "id"})
    spec["patterns"][0]["where"].append("a.id < b.id")
    workload.write_text(json.dumps(spec))
    (tmp_path / "events.csv").write_text(ROWS)
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", workload, "-o", plan, "-q").returncode == 0
    assert cepplan("run", plan, tmp_path / "events.csv", "-o", tmp_path / "out",
                   "-q").returncode == 0
    lines = [line for part in sorted((tmp_path / "out" / "matches").glob("*.jsonl"))
             for line in part.read_text().splitlines()]
    pairs = []
    for line in lines:
        assert line.count('"id"') == 2  # once per event of the match
        events = json.loads(line)["events"]
        pairs.append((events["a"]["id"], events["b"]["id"]))
    assert pairs == [(70, 71)]  # of (70, 71), (70, 95), (90, 95) only it has a.amount < b.amount
    assert cepplan("run", plan, tmp_path / "events.csv", "-o", tmp_path / "pq", "-q",
                   "--format", "parquet").returncode == 0
    table = pq.read_table(tmp_path / "pq" / "matches" / "pattern=ab")
    assert "a.id" in table.column_names and table.column_names.count("a.id") == 1
    assert table.column("a.id").to_pylist() == [70]


def test_an_id_column_must_be_whole_numbers(tmp_path):
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(_workload({"id": "string", "amount": "long"},
                                             {"id_column": "id"})))
    result = cepplan("validate", workload)
    assert result.returncode == 2
    assert "declare it long" in result.stderr
