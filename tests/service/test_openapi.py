"""The OpenAPI document of `cepplan serve` (issue 29): valid OpenAPI 3.1, the shipped workload,
statistics and plan schemas, settings as the service checks them, and every answer the
endpoints give documented — real answers validate against it."""

from __future__ import annotations

import json
import socket
from importlib.resources import files

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate

from cepplan.service.app import ServiceConfig, create_app
from cepplan.service.requests import Limits
from tests.service import serving
from tests.service.serving import MAX_TIME_LIMIT, TOKEN, VALUES, post, request, workload

SETTINGS = serving.accepted_settings(MAX_TIME_LIMIT)
PLANNING = ("/v1/validate", "/v1/optimize", "/v1/compare", "/v1/replan")
# What each endpoint answers, by the service's docs (docs/service.md)
CONNECTION = {"400", "408", "431", "503"}
BODY = {"400", "401", "408", "413", "415", "422", "500", "503", "504"}
SHIPPED = {"Workload": ("cepplan.workload", "workload.schema.json"),
           "Stats": ("cepplan.stats", "stats.schema.json"),
           "Plan": ("cepplan.planner", "plan.schema.json")}


def test_the_document_is_valid_openapi_3_1(openapi):
    validate(openapi)
    assert openapi["openapi"].startswith("3.1")


def test_every_endpoint_documents_every_answer_it_gives(openapi):
    paths = openapi["paths"]
    assert set(paths) == {"/v1/health", *PLANNING}
    assert set(paths["/v1/health"]["get"]["responses"]) == {"200"} | CONNECTION
    for path in PLANNING:
        operation = paths[path]["post"]
        assert set(operation["responses"]) == {"200"} | CONNECTION | BODY, path
        assert operation["requestBody"]["required"]
        assert operation["security"] == [{"bearer": []}]
        for status, answer in operation["responses"].items():
            if status != "200":
                assert answer["content"]["application/problem+json"]["schema"] == {
                    "$ref": "#/components/schemas/Problem"}
    assert "text/html" in paths["/v1/compare"]["post"]["responses"]["200"]["content"]


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_the_shipped_schemas_are_in_the_document(openapi, name):
    """The components are the package's own JSON Schemas, their `$defs` beside them."""
    package, resource = SHIPPED[name]
    shipped = json.loads(files(package).joinpath(resource).read_text())
    components = openapi["components"]["schemas"]
    assert components[name]["properties"].keys() == shipped["properties"].keys()
    assert components[name].get("required") == shipped.get("required")
    for definition in shipped.get("$defs", {}):
        assert f"{name}.{definition}" in components


def test_settings_list_every_setting(openapi):
    documented = openapi["components"]["schemas"]["Settings"]
    assert set(documented["properties"]) == set(SETTINGS)
    assert documented["additionalProperties"] is False
    for name in ("search", "neighborhood", "sharing"):
        assert documented["properties"][name]["type"] == "string"


@pytest.fixture(scope="module")
def document() -> dict:
    """The document of an app with the shared server's limits, in-process (not started)."""
    return create_app(ServiceConfig(Limits(max_time_limit=MAX_TIME_LIMIT))).openapi()


@settings(max_examples=300)
@given(name=st.sampled_from(sorted(SETTINGS)), value=VALUES)
def test_documented_settings_accept_what_the_service_accepts(document, name, value):
    """The Settings schema holds a value exactly when the setting accepts it — but for
    integral floats (3.0), integers to JSON Schema, which the service wants written as
    integers."""
    if isinstance(value, float) and value.is_integer() and name in ("k", "seed"):
        return
    schema = {"$ref": "#/components/schemas/Settings"}
    try:
        serving.conforms(document, schema, {name: value})
        held = True
    except Exception as err:  # jsonschema's ValidationError
        assert type(err).__name__ == "ValidationError", err
        held = False
    assert held == SETTINGS[name](value), (name, value)


def _answers(port: int) -> list[tuple[str, str, int, str, bytes]]:
    """(method, path, status, media type, body) of real requests, each kind of answer."""
    fraud = workload()
    sent = [("GET", "/v1/health", request(port, "GET", "/v1/health")),
            ("POST", "/v1/validate", post(port, "/v1/validate", {"workload": fraud},
                                          token=TOKEN)),
            ("POST", "/v1/validate", post(port, "/v1/validate", {"workload": {}},
                                          token=TOKEN)),
            ("POST", "/v1/optimize", post(port, "/v1/optimize", {
                "workload": fraud, "settings": {"time_limit": 1, "search": "none"}},
                token=TOKEN)),
            ("POST", "/v1/optimize", post(port, "/v1/optimize", {"workload": fraud})),
            ("POST", "/v1/optimize", request(port, "POST", "/v1/optimize", b"{",
                                             token=TOKEN)),
            ("POST", "/v1/optimize", request(port, "POST", "/v1/optimize", b"{}",
                                             {"Content-Type": "text/plain"}, token=TOKEN)),
            ("POST", "/v1/optimize", request(port, "POST", "/v1/optimize", b"x" * 70_000,
                                             token=TOKEN)),
            ("POST", "/v1/compare", post(port, "/v1/compare", {
                "workload": fraud, "settings": {"time_limit": 1}}, token=TOKEN)),
            ("POST", "/v1/compare", post(port, "/v1/compare", {
                "workload": fraud, "settings": {"time_limit": 1}}, token=TOKEN,
                headers={"Accept": "text/html"}))]
    status, _, body = sent[3][2]
    assert status == 200
    plan = json.loads(body)
    drifted = {"format": "cepplan.stats/1", "rates": {"PasswordReset": 3.0}}
    older = {k: v for k, v in plan.items() if k != "invariants"}
    for old in (plan, older):  # a new plan, and a refused re-plan
        sent.append(("POST", "/v1/replan", post(port, "/v1/replan", {
            "workload": fraud, "plan": old, "statistics": drifted,
            "settings": {"time_limit": 5}}, token=TOKEN)))
    return [(method, path, status, headers["content-type"], body)
            for method, path, (status, headers, body) in sent]


def test_real_answers_conform_to_the_document(server, openapi):
    port, _ = server
    statuses = set()
    for method, path, status, media, body in _answers(port):
        statuses.add(status)
        schema = serving.documented_schema(openapi, method, path, status, media)
        if media.startswith("text/html"):
            assert body.startswith(b"<!DOCTYPE html>")
        else:
            serving.conforms(openapi, schema, json.loads(body))
    assert statuses == {200, 400, 401, 413, 415, 422}
    for head, status in ((b"GET /v1/health HTTP/1.1\r\n" + b"X: 1\r\n" * 101, 431),
                         (b"GET /v1/health HTTP/1.1\r\nContent-Length: -1\r\n", 400)):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head + b"\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 %d " % status)
        body = answer.partition(b"\r\n\r\n")[2]
        serving.conforms(openapi, serving.documented_schema(openapi, "GET", "/v1/health", status,
                                            "application/problem+json"), json.loads(body))
