"""The service's OpenAPI 3.1 document: every endpoint with its request and answer schemas —
the shipped workload, statistics and plan JSON Schemas, the settings as the service checks
them — and every answer it can give, errors as RFC 9457 problem details."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from cepplan.service.problems import MEDIA_TYPE, TITLES
from cepplan.service.requests import MAX_DEPTH, Limits, replan_rules, setting_rules

SCHEMAS = "#/components/schemas/"

# The answers of every endpoint, beside its own: the connection's limits (http_protocol.py)
CONNECTION_ERRORS = {
    400: "the request is not valid HTTP (a malformed request line or header)",
    408: "the request head did not arrive in time",
    431: "the request head has too many header fields or bytes",
    503: "too many connections are open, or the service is stopping (see Retry-After)",
}
BODY_ERRORS = {
    400: "the body is not a JSON object, or nests too deep",
    408: "the body did not arrive in time",
    413: "the body is larger than the server's --max-body",
    415: "the body is not application/json",
    422: "the request, the workload or the statistics have problems, each with its JSON "
         "path in `problems`",
    500: "the service failed on this request, or its planning process ended",
    504: "planning did not finish within the server's limit; it was stopped",
}


def openapi_document(app: FastAPI, limits: Limits, planning_seconds: float, *,
                     token: bool) -> dict[str, Any]:
    """The document of `app`'s routes under `limits`; `token`: every endpoint but health
    needs the bearer token."""
    document = get_openapi(title=app.title, version=app.version,
                           description=app.description, routes=app.routes)
    document["components"] = {"schemas": _schemas(limits)}
    if token:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http",
                                                                "scheme": "bearer"}}
    endpoints = _endpoints(planning_seconds)
    for path, operations in document["paths"].items():
        for operation in operations.values():
            request, answers = endpoints[path]
            errors = {**CONNECTION_ERRORS, **(BODY_ERRORS if request else {})}
            if token and path != "/v1/health":
                errors[401] = "the bearer token is missing or wrong (see WWW-Authenticate)"
                operation["security"] = [{"bearer": []}]
            operation["responses"] = {**answers, **{
                str(status): _problem(status, text) for status, text in sorted(errors.items())}}
            if request:
                operation["requestBody"] = {"required": True, "content": {
                    "application/json": {"schema": {"$ref": SCHEMAS + request}}}}
    return document


def _endpoints(planning_seconds: float) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """Per path: its request body's schema and its answers on success."""
    def json_answer(schema: str, text: str) -> dict[str, Any]:
        return {"200": {"description": text, "content": {
            "application/json": {"schema": {"$ref": SCHEMAS + schema}}}}}

    limit = f" A worker spends at most {planning_seconds:g} s on a request (504 after)."
    return {
        "/v1/health": (None, json_answer("Health", "The service is up.")),
        "/v1/validate": ("ValidateRequest", json_answer(
            "Validation", "The workload is valid: its name, digest, patterns and event types."
            + limit)),
        "/v1/optimize": ("PlanningRequest", json_answer(
            "Plan", "The plan.json document of the workload." + limit)),
        "/v1/compare": ("PlanningRequest", {"200": {
            "description": "The report.json document; with 'Accept: text/html', the report "
                           "page." + limit,
            "content": {"application/json": {"schema": {"$ref": SCHEMAS + "Report"}},
                        "text/html": {"schema": {"type": "string"}}}}}),
        "/v1/replan": ("ReplanRequest", json_answer(
            "Replanned", "The new plan, what changed, the modelled costs and gain; a refused "
            "re-plan is a 422 whose detail says the old plan is kept." + limit)),
    }


def _problem(status: int, text: str) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": f"{TITLES[status]}: {text}", "content": {
        MEDIA_TYPE: {"schema": {"$ref": SCHEMAS + "Problem"}}}}
    header = {401: "WWW-Authenticate", 503: "Retry-After"}.get(status)
    if header:
        answer["headers"] = {header: {"schema": {"type": "string"}}}
    return answer


def _schemas(limits: Limits) -> dict[str, Any]:
    rules = setting_rules(limits)
    return {
        **_shipped("Workload", "cepplan.workload", "workload.schema.json"),
        **_shipped("Stats", "cepplan.stats", "stats.schema.json"),
        **_shipped("Plan", "cepplan.planner", "plan.schema.json"),
        "Settings": {"type": "object", "additionalProperties": False,
                     "description": "The planner's settings, as `cepplan optimize` takes them.",
                     "properties": {name: rule.schema for name, rule in rules.items()}},
        "ValidateRequest": {"type": "object", "required": ["workload"],
                            "additionalProperties": False, "properties": {
                                "workload": {"$ref": SCHEMAS + "Workload"}},
                            "description": f"Nested at most {MAX_DEPTH} levels."},
        "PlanningRequest": {"type": "object", "required": ["workload"],
                            "additionalProperties": False, "properties": {
                                "workload": {"$ref": SCHEMAS + "Workload"},
                                "stats": {"$ref": SCHEMAS + "Stats"},
                                "settings": {"$ref": SCHEMAS + "Settings"}},
                            "description": f"Nested at most {MAX_DEPTH} levels."},
        "ReplanRequest": {"type": "object", "required": ["workload", "plan", "statistics"],
                          "additionalProperties": False, "properties": {
                              "workload": {"$ref": SCHEMAS + "Workload"},
                              "plan": {"$ref": SCHEMAS + "Plan"},
                              "statistics": {"$ref": SCHEMAS + "Stats"},
                              "settings": {"type": "object", "additionalProperties": False,
                                           "properties": {
                                               name: rule.schema for name, rule in
                                               replan_rules(limits).items()}}},
                          "description": "The plan in use and the new statistics; entries "
                          "they lack are the plan's own (its invariants' basis). Nested at "
                          f"most {MAX_DEPTH} levels."},
        "Replanned": {"type": "object", "required": ["plan", "changes", "old_cost", "new_cost",
                                                     "gain", "violations"], "properties": {
            "plan": {"$ref": SCHEMAS + "Plan"},
            "changes": {**_strings(), "description": "per changed pattern, what changed"},
            "old_cost": {"type": "number", "description": "the old plan's modelled events "
                         "per time unit under the new statistics"},
            "new_cost": {"type": "number", "description": "the new plan's"},
            "gain": {"type": "number", "description": "old_cost / new_cost"},
            "violations": {"type": "array", "items": {
                "type": "object", "required": ["statistic", "measured", "low", "high",
                                               "description"],
                "properties": {"statistic": {"type": "string"},
                               "measured": {"type": "number"},
                               "low": {"type": ["number", "null"]},
                               "high": {"type": ["number", "null"]},
                               "subject": {"type": "string"}, "unit": {"type": "string"},
                               "description": {"type": "string"}}},
                "description": "the new statistics outside the old plan's ranges"}}},
        "Validation": {"type": "object", "required": ["valid", "name", "digest", "patterns",
                                                      "event_types"],
                       "properties": {"valid": {"const": True}, "name": {"type": "string"},
                                      "digest": {"type": "string",
                                                 "description": "sha256 of the workload's "
                                                 "canonical JSON"},
                                      "patterns": _strings(), "event_types": _strings()}},
        "Report": {"type": "object", "required": ["format"], "description":
                   "The report.json document of `cepplan compare` (docs/report.md).",
                   "properties": {"format": {"const": "cepplan.report/2"}}},
        "Health": {"type": "object", "required": ["status", "version", "workers"],
                   "properties": {
                       "status": {"const": "ok"}, "version": {"type": "string"},
                       "workers": _count("planning processes"),
                       "cached_answers": _count("answers in the cache"),
                       "served": _count("requests answered"),
                       "idle": _count("planning processes ready for a request"),
                       "planning": _count("requests planning now"),
                       "waiting": _count("requests waiting for a planning process"),
                       "stopped": _count("requests whose planning was stopped: over the "
                                         "server's limit, abandoned by their client, "
                                         "the service stopping, or the process died")}},
        "Problem": {"type": "object", "required": ["type", "title", "status", "detail"],
                    "description": "RFC 9457 problem details.", "properties": {
                        "type": {"type": "string", "format": "uri-reference"},
                        "title": {"type": "string"},
                        "status": {"type": "integer", "minimum": 400, "maximum": 599},
                        "detail": {"type": "string"},
                        "problems": {"type": "array",
                                     "items": {"$ref": SCHEMAS + "InputProblem"}}}},
        "InputProblem": {"type": "object", "required": ["file", "path", "message"],
                         "description": "One problem of the input, as the command line prints "
                         "it: `error: FILE: PATH: MESSAGE`.", "properties": {
                             "file": {"type": "string", "description": "request.workload, "
                                      "request.stats or request"},
                             "path": {"type": "string", "description": "its JSON path"},
                             "message": {"type": "string"}}},
    }


def _shipped(name: str, package: str, resource: str) -> dict[str, Any]:
    """A shipped JSON Schema as components: `name` and one `name.DEF` per definition, its
    references pointing at them (inside the OpenAPI document `#/$defs/...` means nothing)."""
    schema = json.loads(files(package).joinpath(resource).read_text())
    definitions = schema.pop("$defs", {})
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    prefix = f"{SCHEMAS}{name}."
    text = json.dumps({name: schema, **{f"{name}.{k}": v for k, v in definitions.items()}})
    return json.loads(text.replace('"#/$defs/', f'"{prefix}'))


def _strings() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}}


def _count(text: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "description": text}
