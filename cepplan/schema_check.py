"""Checking a JSON document against one of cepplan's shipped JSON Schemas, with problems a user
can act on: the file, the JSON path and a short message that never echoes a huge value.

A document is first checked by `conforms`, a small validator of the keywords cepplan's schemas
use (draft 2020-12 semantics); only a document it finds wrong, or a schema with a keyword it
does not know, goes to jsonschema, which finds and words the problems (importing jsonschema
costs more than validating: a tenth of a second of every command that reads a workload).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from cepplan.errors import Problem
from cepplan.workload.paths import json_path

if TYPE_CHECKING:
    import jsonschema

MAX_PROBLEMS = 10
_KIND = {"object": "an object", "array": "a list", "string": "a string", "number": "a number",
         "integer": "a whole number", "boolean": "true or false", "null": "null"}


@lru_cache(maxsize=8)
def shipped_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped as package data, e.g. ("cepplan.planner", "plan.schema.json")."""
    return json.loads(resources.files(package).joinpath(name).read_text())


def schema_problems(document: Any, schema: dict[str, Any], file: str) -> list[Problem]:
    """The document's schema violations (at most `MAX_PROBLEMS`), ordered by JSON path."""
    if conforms(document, schema):
        return []
    import jsonschema

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


def conforms(document: Any, schema: dict[str, Any]) -> bool | None:
    """Whether `document` is valid against `schema` (JSON Schema draft 2020-12), for the
    keywords cepplan's schemas use; None when the schema uses one this does not check."""
    try:
        return _valid(document, schema, schema)
    except _Unknown:
        return None


class _Unknown(Exception):
    """A schema keyword `conforms` does not check."""


_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description",
                          "default", "examples", "format"})  # format: not asserted by default
_TYPES = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
          "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
          "null": lambda v: v is None,
          "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
          or (isinstance(v, float) and v.is_integer())}


def _valid(value: Any, schema: Any, root: dict[str, Any]) -> bool:
    if schema is True or schema is False:
        return schema
    number = _TYPES["number"](value)
    for key, rule in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "$ref":
            if not rule.startswith("#/$defs/"):
                raise _Unknown(rule)
            if not _valid(value, root["$defs"][rule.removeprefix("#/$defs/")], root):
                return False
        elif key == "type":
            if not any(_TYPES[t](value) for t in ([rule] if isinstance(rule, str) else rule)):
                return False
        elif key in ("const", "enum"):
            if not any(_equal(value, v) for v in ([rule] if key == "const" else rule)):
                return False
        elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if number and not _BOUNDS[key](value, rule):
                return False
        elif key in ("minItems", "maxItems", "minProperties", "maxProperties", "minLength",
                     "maxLength"):
            kind = dict if "Properties" in key else list if "Items" in key else str
            if isinstance(value, kind) and not (len(value) >= rule if key.startswith("min")
                                                else len(value) <= rule):
                return False
        elif key == "pattern":
            if isinstance(value, str) and not re.search(rule, value):
                return False
        elif key == "required":
            if isinstance(value, dict) and not all(name in value for name in rule):
                return False
        elif key == "properties":
            if isinstance(value, dict) and not all(
                    _valid(value[name], sub, root) for name, sub in rule.items() if name in value):
                return False
        elif key == "additionalProperties":
            if "patternProperties" in schema:
                raise _Unknown(key)
            known = schema.get("properties", {})
            if isinstance(value, dict) and not all(
                    _valid(item, rule, root) for name, item in value.items() if name not in known):
                return False
        elif key == "items":
            if "prefixItems" in schema:
                raise _Unknown(key)
            if isinstance(value, list) and not all(_valid(item, rule, root) for item in value):
                return False
        else:
            raise _Unknown(key)
    return True


_BOUNDS = {"minimum": lambda v, b: v >= b, "maximum": lambda v, b: v <= b,
           "exclusiveMinimum": lambda v, b: v > b, "exclusiveMaximum": lambda v, b: v < b}


def _equal(a: Any, b: Any) -> bool:
    """JSON equality as jsonschema compares for const and enum: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return a == b
