"""`cepplan validate` reports every shape problem of a file, each at its place and in plain
words: a missing key at the key's own path, an unknown key with the spelling meant."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.errors import InputError
from cepplan.schema_check import MAX_PROBLEMS
from cepplan.workload import build_workload
from cepplan.workload.loader import workload_schema

ERROR = re.compile(r"^error: (?P<file>[^:]+): (?P<place>[^:]+): (?P<problem>.+)$")
GOOD = {"format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {"A": {"attributes": {"x": "double"}}},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:A"], "within": 5}]}


def _errors(outcome) -> list[tuple[str, str]]:
    """(place, problem) of each `error:` line."""
    assert outcome.code == 2 and "Traceback" not in outcome.err, outcome.err
    found = []
    for line in outcome.errors:
        match = ERROR.match(line)
        assert match, line
        found.append((match["place"], match["problem"]))
    return found


def test_an_empty_object_gets_one_line_per_missing_key_each_at_its_place(cli, tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("{}")
    errors = _errors(cli("validate", path))
    required = workload_schema()["required"]  # format, time_unit, event_types, patterns
    assert sorted(place for place, _ in errors) == sorted(required)
    assert all(problem.startswith("missing (") for _, problem in errors)
    assert ("patterns", "missing (a workload needs at least one pattern)") in errors
    assert not any("required property" in problem for _, problem in errors)


def test_a_file_with_several_errors_gets_them_all(cli, tmp_path):
    doc = json.loads(json.dumps(GOOD))
    doc["time_unit"] = "sec"
    doc["colour"] = "blue"
    doc["event_types"]["A"]["atributes"] = {}
    doc["patterns"][0].pop("name")
    doc["patterns"][0]["wher"] = ["a.x > 1"]
    doc["patterns"][0]["weight"] = -1
    doc["statistics"] = {"models": {"A": {"p": 0.5}}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    errors = dict(_errors(cli("validate", path)))
    assert errors == {
        "time_unit": "'sec' is not one of 'ms', 's', 'min', 'h', 'd'",
        "colour": "unknown key (known keys here: format, name, time_unit, source, schemas, "
                  "event_types, options, patterns, contexts, consumers, statistics)",
        "event_types.A.atributes": "unknown key (did you mean 'attributes'?)",
        "patterns[0].name": "missing (the pattern's unique name)",
        "patterns[0].wher": "unknown key (did you mean 'where'?)",
        "patterns[0].weight": "must be more than 0, found -1",
        "statistics.models.A.kind": "missing (poisson, bernoulli or markov)",
    }


def test_problems_are_ordered_by_place_with_list_positions_in_numeric_order():
    doc = {**GOOD, "patterns": [{"structure": ["SEQ", "a:A"], "within": 1}] * 12}
    with pytest.raises(InputError) as info:
        build_workload(doc, file="w.json")
    assert [p.path for p in info.value.problems] == [f"patterns[{i}].name" for i in range(12)]


def test_a_file_wrong_everywhere_is_cut_at_the_limit_and_the_rest_counted():
    doc = {**GOOD, "patterns": [{"name": "p"}] * (MAX_PROBLEMS + 7)}
    with pytest.raises(InputError) as info:
        build_workload(doc, file="w.json")
    problems = info.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].message == "and 7 more problem(s) of the same kinds"


@settings(max_examples=40)
@given(missing=st.sets(st.sampled_from(["format", "time_unit", "event_types", "patterns"])))
def test_each_missing_top_level_key_is_named_once(missing):
    doc = {key: value for key, value in GOOD.items() if key not in missing}
    if not missing:
        build_workload(doc)
        return
    with pytest.raises(InputError) as info:
        build_workload(doc, file="w.json")
    assert sorted(p.path for p in info.value.problems) == sorted(missing)
