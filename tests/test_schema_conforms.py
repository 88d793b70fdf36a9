"""`schema_check.conforms`, the small validator that spares importing jsonschema for documents
that are right, against jsonschema itself: on every bundled workload, a plan and a statistics
file, and about a thousand random mutations of them, both give the same verdict."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import jsonschema
import pytest

from cepplan.planner.plan import trivial_plan, write_plan
from cepplan.schema_check import conforms, shipped_schema
from cepplan.workload import load_workload
from cepplan.workload.loader import workload_schema

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ODD_VALUES = [None, True, False, 0, 1, -1, 1.5, 0.0, 1e300, "", "x", "a b", "min", "SEQ",
              "_a1", "é", [], [1], ["x"], {}, {"x": 1}, 2 ** 63]


def _paths(value, at=()):
    """Every JSON path in `value`."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


def _mutated(document, rng: random.Random):
    """A copy with one change: a value replaced, a key removed or added, an item dropped or
    duplicated."""
    out = copy.deepcopy(document)
    path = rng.choice([p for p in _paths(out) if p])
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    key, move = path[-1], rng.random()
    if move < 0.6:
        parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif move < 0.75 and isinstance(parent, dict):
        del parent[key]
    elif move < 0.85 and isinstance(parent, dict):
        parent[rng.choice(["extra", "name", "type", "format"])] = rng.choice(ODD_VALUES)
    elif isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key])) if move < 0.95 else parent.pop(key)
    else:
        parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return out


def _documents(tmp_path):
    for example in sorted(EXAMPLES.iterdir()):
        raw = json.loads((example / "workload.json").read_text())
        yield example.name, raw, workload_schema()
        plan = tmp_path / f"{example.name}.plan.json"
        write_plan(trivial_plan(load_workload(example / "workload.json")), plan)
        yield f"{example.name} plan", json.loads(plan.read_text()), shipped_schema(
            "cepplan.planner", "plan.schema.json")
        truth = example / "events.truth.json"
        if truth.exists():
            yield f"{example.name} stats", json.loads(truth.read_text()), shipped_schema(
                "cepplan.stats", "stats.schema.json")


def test_conforms_agrees_with_jsonschema(tmp_path):
    checked = wrong = 0
    for name, document, schema in _documents(tmp_path):
        validator = jsonschema.Draft202012Validator(schema)
        assert conforms(document, schema) is validator.is_valid(document), name
        rng = random.Random(name)
        for _ in range(60):
            changed = _mutated(document, rng)
            verdict = conforms(changed, schema)
            assert verdict is not None, name  # cepplan's schemas use only known keywords
            assert verdict == validator.is_valid(changed), (name, changed)
            checked += 1
            wrong += not verdict
    assert wrong > checked // 5  # the mutations do break documents, often


@pytest.mark.parametrize("schema,document,valid", [
    ({"type": "integer"}, 1.0, True), ({"type": "integer"}, True, False),
    ({"type": "number"}, False, False), ({"const": 1}, True, False), ({"const": 1}, 1.0, True),
    ({"enum": [[1, 2]]}, [1.0, 2], True), ({"minimum": 0}, "x", True),
    ({"pattern": "^[a-z]+$"}, "ab1", False), ({"pattern": "b"}, "abc", True),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"a": "x"}, True),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"b": 1}, False),
    ({"items": {"type": "string"}, "minItems": 1}, [], False)])
def test_conforms_on_single_keywords(schema, document, valid):
    assert conforms(document, schema) is valid
    assert jsonschema.Draft202012Validator(schema).is_valid(document) is valid


def test_unknown_keywords_defer_to_jsonschema():
    assert conforms({"a": 1}, {"patternProperties": {"a": {}}}) is None
    assert conforms([1], {"prefixItems": [{}]}) is None
    assert conforms(1, {"$ref": "https://example.com/schema"}) is None
