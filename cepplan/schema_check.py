"""Checking a JSON document against one of cepplan's shipped JSON Schemas, with problems a user
can act on: the file, the JSON path and a short message that never echoes a huge value."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema

from cepplan.errors import Problem
from cepplan.workload.paths import json_path

MAX_PROBLEMS = 10
_KIND = {"object": "an object", "array": "a list", "string": "a string", "number": "a number",
         "integer": "a whole number", "boolean": "true or false", "null": "null"}


@lru_cache(maxsize=8)
def shipped_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped as package data, e.g. ("cepplan.planner", "plan.schema.json")."""
    return json.loads(resources.files(package).joinpath(name).read_text())


def schema_problems(document: Any, schema: dict[str, Any], file: str) -> list[Problem]:
    """The document's schema violations (at most `MAX_PROBLEMS`), ordered by JSON path."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(document),
                    key=lambda e: (list(map(str, e.absolute_path)), str(e.validator)))
    return [Problem(file, json_path(e.absolute_path), _message(e))
            for e in errors[:MAX_PROBLEMS]]


def _message(error: jsonschema.ValidationError) -> str:
    found = _kind_of(error.instance)
    if error.validator == "type":
        wanted = error.validator_value
        wanted = wanted if isinstance(wanted, list) else [wanted]
        return f"expected {' or '.join(_KIND.get(w, w) for w in wanted)}, found {found}"
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown key(s)")
    if error.validator == "required":
        return error.message.replace("is a required property", "is missing")[-200:]
    if len(repr(error.instance)) > 60:  # never echo a large value back
        return f"{found} does not fit ({error.validator} {error.validator_value!r:.60})"
    return error.message[:200]


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"a string of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return "an object"
    return "null"
