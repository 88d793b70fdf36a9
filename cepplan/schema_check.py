"""Checking a JSON document against one of cepplan's shipped JSON Schemas, with problems a user
can act on: the file, the JSON path and a short message that never echoes a huge value.

A document is first checked by `conforms`, a small validator of the keywords cepplan's schemas
use (draft 2020-12 semantics); only a document it finds wrong, or a schema with a keyword it
does not know, goes to jsonschema, which finds and words the problems (importing jsonschema
costs more than validating: a tenth of a second of every command that reads a workload).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from cepplan.errors import Problem, json_path

if TYPE_CHECKING:
    import jsonschema

MAX_PROBLEMS = 100  # a file wrong everywhere is told so in this many lines, then counted
_KIND = {"object": "an object", "array": "a list", "string": "a string", "number": "a number",
         "integer": "a whole number", "boolean": "true or false", "null": "null"}
_BOUND_WORDS = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
                "exclusiveMaximum": "less than"}


@lru_cache(maxsize=8)
def shipped_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped as package data, e.g. ("cepplan.planner", "plan.schema.json")."""
    return json.loads(resources.files(package).joinpath(name).read_text())


def schema_problems(document: Any, schema: dict[str, Any], file: str) -> list[Problem]:
    """Every schema violation of the document, in plain words, each at its JSON path (a
    missing or unknown key at the key's own path), ordered by path; past `MAX_PROBLEMS`, a last line
    counts the rest."""
    if conforms(document, schema):
        return []
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    found: dict[tuple[str, str], tuple[list, Problem]] = {}
    for error in validator.iter_errors(document):
        for parts, message in _problems(error, schema):
            path = json_path(parts)
            found.setdefault((path, message), (_order(parts), Problem(file, path, message)))
    problems = [problem for _, problem in sorted(found.values(), key=lambda item: item[0])]
    if len(problems) > MAX_PROBLEMS:
        rest = len(problems) - MAX_PROBLEMS
        problems = [*problems[:MAX_PROBLEMS],
                    Problem(file, "", f"and {rest} more problem(s) of the same kinds")]
    return problems


def _order(path: Iterable[str | int]) -> list[tuple[int, str | int]]:
    """Sort key of a JSON path: list positions in numeric order, keys as written."""
    return [(0, part) if isinstance(part, int) else (1, part) for part in path]


def _problems(error: jsonschema.ValidationError,
              root: dict[str, Any]) -> list[tuple[list[str | int], str]]:
    """One validation error as (JSON path parts, plain message) pairs: a missing key or an unknown
    key is reported at its own path, one line per key."""
    here = list(error.absolute_path)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        properties = error.schema.get("properties", {})
        return [([*here, name], "missing" + _hint(properties.get(name), root))
                for name in error.validator_value if name not in instance]
    if error.validator == "additionalProperties" and error.validator_value is False \
            and isinstance(instance, dict):
        known = list(error.schema.get("properties", {}))
        return [([*here, name], _unknown_key(name, known))
                for name in instance if name not in known]
    return [(here, _message(error, root))]


def _hint(schema: dict[str, Any] | None, root: dict[str, Any]) -> str:
    """` (what the key holds)`, from the schema's description of it; empty without one."""
    text = _description(schema, root)
    return f" ({text})" if text else ""


def _description(schema: dict[str, Any] | None, root: dict[str, Any]) -> str:
    """The `description` of a schema, or of the definition its `$ref` names."""
    while isinstance(schema, dict):
        if "description" in schema:
            return schema["description"]
        ref = schema.get("$ref", "")
        schema = root.get("$defs", {}).get(ref.removeprefix("#/$defs/")) \
            if ref.startswith("#/$defs/") else None
    return ""


def _unknown_key(name: str, known: list[str]) -> str:
    """An unknown key, with the closest known spelling if one is near."""
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f"unknown key (did you mean {close[0]!r}?)"
    return f"unknown key (known keys here: {', '.join(known)})" if known else "unknown key"


def _message(error: jsonschema.ValidationError, root: dict[str, Any]) -> str:
    found = _kind_of(error.instance)
    rule = error.validator_value
    if error.validator == "type":
        wanted = rule if isinstance(rule, list) else [rule]
        return f"expected {' or '.join(_KIND.get(w, w) for w in wanted)}, found {found}"
    if error.validator == "const":
        return f"expected {rule!r}, found {found}"
    if error.validator == "enum":
        return f"{found} is not one of {', '.join(map(repr, rule))}"
    if error.validator in _BOUND_WORDS:
        return f"must be {_BOUND_WORDS[error.validator]} {rule:g}, found {found}"
    if error.validator in ("minItems", "minProperties", "maxItems", "maxProperties"):
        unit = "item" if "Items" in error.validator else "key"
        count = len(error.instance)
        if error.validator.startswith("min"):
            return ("is empty" if not count else f"has {count} {unit}(s)") + \
                f": at least {rule} {unit}(s) needed"
        return f"has {count} {unit}(s): at most {rule} allowed"
    if error.validator == "pattern":
        return f"{found} is not {_description(error.schema, root) or 'of the expected form'}"
    if error.validator in ("minLength", "maxLength"):
        words = "at least" if error.validator == "minLength" else "at most"
        return f"must have {words} {rule} character(s), found {found}"
    if len(repr(error.instance)) > 60:  # never echo a large value back
        return f"{found} does not fit ({error.validator} {rule!r:.60})"
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
