"""What a request may carry, checked in the event loop before any planning: the body's size,
media type and nesting, the envelope's shape, and the settings' ranges."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request

from cepplan.errors import Problem
from cepplan.limits import MAX_K, MIN_TIME_LIMIT
from cepplan.planner.compose import AUTO
from cepplan.planner.evaluation import SEARCHES, SHARING_SHAPES
from cepplan.planner.front import DP, HEURISTIC
from cepplan.planner.strategies import STRATEGIES
from cepplan.search.neighbourhood import parse_neighbourhood
from cepplan.service.problems import ProblemError

MAX_DEPTH = 32
REQUEST_FILE = "request"
SOLVERS = (AUTO, DP, HEURISTIC)
DEFAULT_TIME_LIMIT = 10.0
MAX_VERTICES = 64  # vertex:K neighbourhoods
NEIGHBOURHOOD_PATTERN = "^(edge|vertex:0*([2-9]|[1-5][0-9]|6[0-4]))$"  # K from 2 to 64
BODY_SECONDS = 10.0  # a body may take this long, plus its size at MIN_BODY_RATE
MIN_BODY_RATE = 64 * 1024  # bytes per second


@dataclass(frozen=True)
class Limits:
    """The server's limits: body bytes and the largest solver time limit a request may ask."""

    max_body: int = 1 << 20
    max_time_limit: float = 60.0


async def read_json_body(request: Request, limits: Limits) -> dict[str, Any]:
    """The parsed JSON object of the request; 413, 415 or 400 problems otherwise."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise ProblemError(415, "send the request as application/json")
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limits.max_body):
        raise ProblemError(413, f"the body may hold at most {limits.max_body} bytes")
    seconds = BODY_SECONDS + (int(declared) if declared else limits.max_body) / MIN_BODY_RATE
    try:
        body = await asyncio.wait_for(_body(request, limits), seconds)
    except TimeoutError:
        raise ProblemError(408, f"the body did not arrive within {seconds:.0f} s",
                           headers={"Connection": "close"}) from None
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise ProblemError(400, f"the body is not valid JSON: {err}") from None
    if not isinstance(document, dict):
        raise ProblemError(400, "the body must be a JSON object")
    if nesting(document) > MAX_DEPTH:
        raise ProblemError(400, f"the body nests deeper than {MAX_DEPTH} levels")
    return document


async def _body(request: Request, limits: Limits) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body:
            raise ProblemError(413, f"the body may hold at most {limits.max_body} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def nesting(document: Any) -> int:
    """How deep arrays and objects nest (iteratively: hostile depth cannot blow the stack)."""
    deepest, stack = 0, [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def envelope(document: dict[str, Any], limits: Limits, *, planning: bool) -> dict[str, Any]:
    """The checked request: `workload` (object), optional `stats` (object) and, for planning
    endpoints, `settings` with known keys in range; 422 naming every problem otherwise."""
    if not planning:
        return _members(document, {"workload": "a workload.json document"}, {}, None)
    return _members(document, {"workload": "a workload.json document"},
                    {"stats": "a stats.json document"}, setting_rules(limits))


def replan_envelope(document: dict[str, Any], limits: Limits) -> dict[str, Any]:
    """The checked re-planning request: `workload`, `plan` (the plan.json in use) and
    `statistics` (a stats.json document), objects all three, and optional `settings` with
    `seed` and `time_limit` only; 422 naming every problem otherwise."""
    return _members(document, {"workload": "a workload.json document",
                               "plan": "the plan.json document in use",
                               "statistics": "a stats.json document of the new statistics"},
                    {}, replan_rules(limits))


def replan_rules(limits: Limits) -> dict[str, SettingRule]:
    """The settings a re-planning request may carry (the rest are the old plan's)."""
    return {name: rule for name, rule in setting_rules(limits).items()
            if name in ("time_limit", "seed")}


def _members(document: dict[str, Any], required: dict[str, str], optional: dict[str, str],
             rules: dict[str, SettingRule] | None) -> dict[str, Any]:
    """The request's members: each of `required` an object, each of `optional` an object
    or absent, `settings` (when `rules` are given) by those rules, nothing else; 422 naming
    every problem otherwise."""
    problems: list[Problem] = []

    def bad(path: str, message: str) -> None:
        problems.append(Problem(REQUEST_FILE, path, message))

    allowed = {*required, *optional, *(("settings",) if rules is not None else ())}
    for key in document:
        if key not in allowed:
            bad(key, f"unknown member; expected {', '.join(sorted(allowed))}")
    for key, what in required.items():
        if not isinstance(document.get(key), dict):
            bad(key, f"{what} (an object) is required")
    for key, what in optional.items():
        if document.get(key) is not None and not isinstance(document[key], dict):
            bad(key, f"must be {what} (an object)")
    settings = document.get("settings", {})
    if not isinstance(settings, dict):
        bad("settings", "must be an object")
        settings = {}
    checked = _settings(settings, rules or {}, bad) if rules is not None else {}
    if problems:
        raise ProblemError(422, "the request has problems", problems)
    return {**{key: document[key] for key in required},
            **{key: document.get(key) for key in optional}, "settings": checked}


@dataclass(frozen=True)
class SettingRule:
    """What one setting accepts: the check, the message when it fails, and the same rule as
    a JSON Schema (for the OpenAPI document)."""

    holds: Callable[[Any], bool]
    message: str
    schema: dict[str, Any]


def setting_rules(limits: Limits) -> dict[str, SettingRule]:
    """Every setting a planning request may carry, by name."""
    top = limits.max_time_limit
    return {
        "solver": _one_of(SOLVERS, "the acquisition planner"),
        "k": SettingRule(lambda v: _integer(v) and 0 <= v <= MAX_K,
                         f"must be an integer from 0 to {MAX_K}",
                         {"type": "integer", "minimum": 0, "maximum": MAX_K, "description":
                          "plans each pattern offers the patterns built on it (0: all)"}),
        "strategy": _one_of(STRATEGIES, "how the k plans are chosen from the Pareto front"),
        "seed": SettingRule(lambda v: _integer(v) and 0 <= v < 2**63,
                            "must be a non-negative integer",
                            {"type": "integer", "minimum": 0, "maximum": 2**63 - 1,
                             "description": "seed of the random choices"}),
        "time_limit": SettingRule(
            lambda v: _number(v) and MIN_TIME_LIMIT <= v <= top,
            f"must be a number of seconds from {MIN_TIME_LIMIT:g} to {top:g}, the server's "
            "limit", {"type": "number", "minimum": MIN_TIME_LIMIT, "maximum": top,
                      "description": "the planner's time limit in seconds (default: "
                      f"{min(DEFAULT_TIME_LIMIT, top):g})"}),
        "share": SettingRule(lambda v: isinstance(v, bool), "must be true or false",
                             {"type": "boolean", "description": "plan shared subevents once"}),
        "search": _one_of(SEARCHES, "the evaluation pass's search (none: no search)"),
        "neighborhood": SettingRule(
            _neighbourhood, f"must be edge or vertex:K with K from 2 to {MAX_VERTICES}",
            {"type": "string", "pattern": NEIGHBOURHOOD_PATTERN,
             "description": f"the search's moves: edge, or vertex:K (K from 2 to "
             f"{MAX_VERTICES})"}),
        "sharing": _one_of(tuple(SHARING_SHAPES), "which shared subtrees the search may "
                           "form: any common subtree, or common join-order prefixes"),
    }


def _settings(settings: dict[str, Any], rules: dict[str, SettingRule],
              bad) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    for key, value in settings.items():
        if key not in rules:
            bad(f"settings.{key}", f"unknown setting; expected {', '.join(rules)}")
            continue
        if rules[key].holds(value):
            checked[key] = value
        else:
            bad(f"settings.{key}", rules[key].message)
    return checked


def _one_of(names: tuple[str, ...], description: str) -> SettingRule:
    """The rule of a choice: one of `names`, a string (a list or an object is no name, and
    `in` on an object raised TypeError)."""
    return SettingRule(lambda v: isinstance(v, str) and v in names,
                       f"must be one of {', '.join(names)}",
                       {"type": "string", "enum": list(names), "description": description})


def _neighbourhood(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return parse_neighbourhood(value)[1] <= MAX_VERTICES
    except ValueError:
        return False


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
