"""`cepplan serve` as a real HTTP server on loopback: answers equal the CLI's, identical
requests come from the cache, and hostile requests get a 4xx problem document — never a 500,
a hang, or code run."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings

from tests.conftest import EXAMPLES
from tests.hostile_workloads import traffic_named
from tests.in_process import cepplan
from tests.service import serving
from tests.service.serving import (
    MAX_BODY,
    MAX_TIME_LIMIT,
    TOKEN,
    VALUES,
    accepted_settings,
    conforms,
    documented_schema,
    workload,
)

SETTINGS = accepted_settings(MAX_TIME_LIMIT)


def request(port: int, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None, token: str | None = TOKEN) -> tuple[int, dict, bytes]:
    return serving.request(port, method, path, body, headers, token)


def post(port: int, path: str, document, **kwargs) -> tuple[int, dict, bytes]:
    return request(port, "POST", path, json.dumps(document).encode(), **kwargs)


@pytest.mark.parametrize("name", ["fraud", "stocks", "network"])
def test_optimize_answers_the_plan_the_cli_writes(server, tmp_path, name):
    port, _ = server
    status, headers, body = post(port, "/v1/optimize", {"workload": workload(name),
                                                        "settings": {"search": "none"}})
    assert status == 200 and headers["content-type"] == "application/json"
    out = tmp_path / "plan.json"
    done = cepplan("optimize", EXAMPLES / name / "workload.json", "-o", out, "--search", "none")
    assert done.returncode == 0, done.stderr
    assert _rounded(json.loads(body)["patterns"]) == _rounded(
        json.loads(out.read_text())["patterns"])  # sums may differ in the last bit


def test_optimize_takes_the_prefix_sharing_setting(server):
    port, _ = server
    status, _, body = post(port, "/v1/optimize", {
        "workload": workload("trading_rules"),
        "settings": {"sharing": "prefix", "time_limit": 1}})
    assert status == 200
    sharing = json.loads(body)["sharing"]
    assert sharing["search"]["sharing"] == "prefix" and sharing["search"]["shape"] == "left-deep"


def _rounded(value):
    """`value` with every float rounded to 12 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_identical_requests_come_from_the_cache(server):
    port, _ = server
    document = {"workload": workload("stocks"), "settings": {"seed": 7, "k": 4}}
    first = post(port, "/v1/optimize", document)
    reordered = {"settings": {"k": 4, "seed": 7}, "workload": workload("stocks")}
    second = post(port, "/v1/optimize", reordered)
    assert first[1]["x-cepplan-cache"] == "miss" and second[1]["x-cepplan-cache"] == "hit"
    assert first[2] == second[2]


def test_validate_and_compare(server):
    port, _ = server
    status, _, body = post(port, "/v1/validate", {"workload": workload("network")})
    assert status == 200 and json.loads(body)["patterns"][0] == "tcp_session"
    status, _, body = post(port, "/v1/compare", {"workload": workload("fraud")})
    report = json.loads(body)
    assert status == 200 and report["format"] == "cepplan.report/2"
    assert {p["name"] for p in report["planners"]} >= {"trivial", "dp", "heuristic"}
    assert report["summary"]["planner"] == "dp"  # what the page opens on, as the CLI writes it
    status, headers, body = post(port, "/v1/compare", {"workload": workload("fraud")},
                                 headers={"Accept": "text/html"})
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert body.startswith(b"<!DOCTYPE html>")
    assert body.index(b"<section id='summary'>") < body.index(b"<section id='planners'>")


@pytest.mark.parametrize(("name", "section"), [("traffic", "contexts"),
                                               ("mobile", "covering")])
def test_compare_answers_the_variants_the_cli_writes(server, tmp_path, name, section):
    """/v1/compare carries the with-and-without sections of `cepplan compare`, equal to the
    CLI's: contexts planned both ways, covering with each solver."""
    port, _ = server
    status, _, body = post(port, "/v1/compare", {"workload": workload(name),
                                                 "settings": {"time_limit": 20}})
    assert status == 200
    served = json.loads(body)
    done = cepplan("compare", EXAMPLES / name / "workload.json", "--time-limit", "20", "-o",
                   tmp_path / "r.html", "-q")
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "r.json").read_text())
    assert served[section] == written[section]


def test_validate_reports_every_problem_with_its_path(server):
    port, _ = server
    bad = workload("stocks")
    bad["patterns"][0]["where"] = ["a.prize < b.peak"]
    status, headers, body = post(port, "/v1/validate", {"workload": bad})
    problem = json.loads(body)
    assert status == 422 and headers["content-type"] == "application/problem+json"
    assert problem["status"] == 422 and problem["title"]
    assert problem["problems"][0]["file"] == "request.workload"
    assert problem["problems"][0]["path"] == "patterns[0].where[0]"
    assert "prize" in problem["problems"][0]["message"]


def test_openapi_document_lists_the_endpoints(server):
    port, _ = server
    status, _, body = request(port, "GET", "/openapi.json")
    paths = json.loads(body)["paths"]
    assert status == 200
    assert {"/v1/validate", "/v1/optimize", "/v1/compare", "/v1/health"} <= set(paths)


def test_health_stays_answered_while_workers_plan(server):
    """Planning runs in worker processes: health is answered while compares keep them busy."""
    port, _ = server
    done: list[int] = []

    def busy(seed: int) -> None:
        document = {"workload": workload("network"), "settings": {"seed": 1000 + seed}}
        done.append(post(port, "/v1/compare", document)[0])

    threads = [threading.Thread(target=busy, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    waits = []
    while any(t.is_alive() for t in threads):
        start = time.perf_counter()
        assert request(port, "GET", "/v1/health", token=None)[0] == 200
        waits.append(time.perf_counter() - start)
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    assert done == [200] * 4
    assert waits and max(waits) < 2.0


def _python_predicate() -> dict:
    bad = workload("stocks")
    bad["patterns"][0]["where"] = ["__import__('os').system('touch pwned') == 0"]
    return {"workload": bad}


def _python_names() -> dict:
    bad = workload("stocks")
    bad["name"] = "__import__('os').system('touch pwned')"
    return {"workload": bad}


def _deep(levels: int) -> bytes:
    return b'{"workload": ' + b"[" * levels + b"]" * levels + b"}"


HOSTILE = {
    # (method, path, body, headers, token) -> expected status
    "no token": ("POST", "/v1/optimize", {"workload": {}}, {}, None, 401),
    "wrong token": ("POST", "/v1/optimize", {"workload": {}}, {}, "wrong", 401),
    "token prefix": ("POST", "/v1/optimize", {"workload": {}}, {}, TOKEN[:-1], 401),
    "token with a tail": ("POST", "/v1/optimize", {"workload": {}}, {}, TOKEN + "x", 401),
    "basic scheme": ("POST", "/v1/validate", {"workload": {}},
                     {"Authorization": "Basic " + TOKEN}, None, 401),
    "openapi without token": ("GET", "/openapi.json", None, {}, None, 401),
    "declared body over the limit": ("POST", "/v1/optimize", b"{}",
                                     {"Content-Length": str(MAX_BODY + 1)}, TOKEN, 413),
    "body over the limit": ("POST", "/v1/optimize",
                            b'{"workload": "' + b"x" * (MAX_BODY + 10) + b'"}', {}, TOKEN, 413),
    "text/plain": ("POST", "/v1/optimize", {"workload": {}}, {"Content-Type": "text/plain"},
                   TOKEN, 415),
    "no content type": ("POST", "/v1/optimize", {"workload": {}}, {"Content-Type": None},
                        TOKEN, 415),
    "form": ("POST", "/v1/validate", b"workload=1",
             {"Content-Type": "application/x-www-form-urlencoded"}, TOKEN, 415),
    "not json": ("POST", "/v1/optimize", b"{workload:", {}, TOKEN, 400),
    "NaN": ("POST", "/v1/optimize", b'{"workload": NaN}', {}, TOKEN, 400),
    "1e400": ("POST", "/v1/optimize", b'{"workload": {}, "settings": {"k": 1e400}}', {},
              TOKEN, 400),
    "array body": ("POST", "/v1/optimize", [1, 2], {}, TOKEN, 400),
    "string body": ("POST", "/v1/optimize", "workload", {}, TOKEN, 400),
    "empty body": ("POST", "/v1/optimize", b"", {}, TOKEN, 400),
    "nesting 40": ("POST", "/v1/optimize", _deep(40), {}, TOKEN, 400),
    "nesting 5000": ("POST", "/v1/validate", _deep(5000), {}, TOKEN, 400),
    "no workload": ("POST", "/v1/optimize", {"settings": {}}, {}, TOKEN, 422),
    "workload a list": ("POST", "/v1/optimize", {"workload": []}, {}, TOKEN, 422),
    "workload a string": ("POST", "/v1/validate", {"workload": "x"}, {}, TOKEN, 422),
    "unknown member": ("POST", "/v1/optimize", {"workload": {}, "plan": 1}, {}, TOKEN, 422),
    "settings on validate": ("POST", "/v1/validate", {"workload": {}, "settings": {}}, {},
                             TOKEN, 422),
    "settings a list": ("POST", "/v1/optimize", {"workload": {}, "settings": []}, {}, TOKEN,
                        422),
    "time limit 1e9": ("POST", "/v1/optimize",
                       {"workload": workload(), "settings": {"time_limit": 1e9}}, {}, TOKEN,
                       422),
    "time limit 0": ("POST", "/v1/optimize", {"workload": workload(),
                                              "settings": {"time_limit": 0}}, {}, TOKEN, 422),
    "time limit -1": ("POST", "/v1/compare", {"workload": workload(),
                                              "settings": {"time_limit": -1}}, {}, TOKEN, 422),
    "time limit text": ("POST", "/v1/optimize",
                        {"workload": workload(), "settings": {"time_limit": "10"}}, {}, TOKEN,
                        422),
    "unknown solver": ("POST", "/v1/optimize",
                       {"workload": workload(), "settings": {"solver": "os.system"}}, {},
                       TOKEN, 422),
    "k negative": ("POST", "/v1/optimize", {"workload": workload(), "settings": {"k": -3}},
                   {}, TOKEN, 422),
    "k a bool": ("POST", "/v1/optimize", {"workload": workload(), "settings": {"k": True}},
                 {}, TOKEN, 422),
    "seed 2**70": ("POST", "/v1/optimize",
                   {"workload": workload(), "settings": {"seed": 2**70}}, {}, TOKEN, 422),
    "unknown search": ("POST", "/v1/optimize",
                       {"workload": workload(), "settings": {"search": "exhaustive"}}, {},
                       TOKEN, 422),
    "vertex:1000": ("POST", "/v1/optimize",
                    {"workload": workload(), "settings": {"neighborhood": "vertex:1000"}}, {},
                    TOKEN, 422),
    "sharing suffix": ("POST", "/v1/optimize",
                       {"workload": workload(), "settings": {"sharing": "suffix"}}, {},
                       TOKEN, 422),
    "sharing a list": ("POST", "/v1/optimize",
                       {"workload": workload(), "settings": {"sharing": ["subtree"]}}, {},
                       TOKEN, 422),
    "sharing an object on compare": ("POST", "/v1/compare",
                                     {"workload": workload(), "settings": {"sharing": {}}},
                                     {"Accept": "text/html"}, TOKEN, 422),
    "vertex:²": ("POST", "/v1/optimize",
                 {"workload": workload(), "settings": {"neighborhood": "vertex:²"}}, {},
                 TOKEN, 422),
    "time limit 5e-324": ("POST", "/v1/optimize",
                          {"workload": workload(), "settings": {"time_limit": 5e-324}}, {},
                          TOKEN, 422),
    "unknown setting": ("POST", "/v1/optimize",
                        {"workload": workload(), "settings": {"exec": "x"}}, {}, TOKEN, 422),
    "stats a list": ("POST", "/v1/optimize", {"workload": workload(), "stats": []}, {},
                     TOKEN, 422),
    "stats wrong format": ("POST", "/v1/optimize",
                           {"workload": workload(), "stats": {"format": "x"}}, {}, TOKEN, 422),
    "empty workload": ("POST", "/v1/optimize", {"workload": {}}, {}, TOKEN, 422),
    "python in a predicate": ("POST", "/v1/optimize", _python_predicate(), {}, TOKEN, 422),
    "GET optimize": ("GET", "/v1/optimize", None, {}, TOKEN, 405),
    "unknown path": ("POST", "/v2/optimize", {"workload": {}}, {}, TOKEN, 404),
    "docs page (off: no CDN)": ("GET", "/docs", None, {}, TOKEN, 404),
    "redoc page (off)": ("GET", "/redoc", None, {}, TOKEN, 404),
}
MEDIA = "application/problem+json"


def test_python_in_a_workload_name_stays_data(server):
    port, cwd = server
    status, _, body = post(port, "/v1/optimize", _python_names())
    assert status == 200
    assert json.loads(body)["workload"]["path"] == "request.workload"
    status, _, body = post(port, "/v1/validate", _python_names())
    assert json.loads(body)["name"] == _python_names()["workload"]["name"]
    assert not (cwd / "pwned").exists()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_request_gets_a_problem_document(server, openapi, case):
    """Each gets its problem document, as the OpenAPI document describes it for the endpoint
    (an unknown path or method: the problem schema itself)."""
    port, cwd = server
    method, path, body, headers, token, expected = HOSTILE[case]
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    status, answer_headers, answer = request(port, method, path, data, headers, token=token)
    assert status == expected, answer[:300]
    assert answer_headers["content-type"] == "application/problem+json"
    problem = json.loads(answer)
    assert problem["status"] == expected and problem["title"] and problem["detail"]
    operation = openapi["paths"].get(path, {}).get(method.lower())
    schema = (documented_schema(openapi, method, path, status, MEDIA) if operation
              else {"$ref": "#/components/schemas/Problem"})
    conforms(openapi, schema, problem)
    if expected == 401:
        assert answer_headers["www-authenticate"] == "Bearer"
    assert not (cwd / "pwned").exists()
    assert request(port, "GET", "/v1/health", token=None)[0] == 200


# -- every setting, any JSON value ------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SETTINGS))
@settings(max_examples=40,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=VALUES)
def test_any_value_of_a_setting_is_planned_or_refused_by_name(server, name, value):
    """A value the setting accepts plans (200); any other — a list, an object, a number for
    a name, a string for a number, a huge integer — is a 422 problem document naming the
    setting, never a 500."""
    port, _ = server
    others = {} if name == "time_limit" else {"time_limit": 1}
    status, headers, body = post(port, "/v1/optimize", {
        "workload": workload(), "settings": {**others, name: value}})
    if SETTINGS[name](value):
        assert status == 200, body[:300]
        return
    assert status == 422, (status, body[:300])
    assert headers["content-type"] == "application/problem+json"
    assert [p["path"] for p in json.loads(body)["problems"]] == [f"settings.{name}"]


def test_unparsable_http_gets_a_problem_document_and_the_server_stays_up(server):
    """`Content-Length: -1` never reaches the app: the HTTP parser refuses it, with a problem
    document (uvicorn's own answer was plain text)."""
    port, _ = server
    for header in (b"Content-Length: -1", b"Content-Length: 1x", b"Bad Header\x01: 1"):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"POST /v1/optimize HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\n" + header + b"\r\n\r\n{}")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), answer[:300]
        assert b"content-type: application/problem+json" in head.lower()
        problem = json.loads(body)
        assert problem["status"] == 400 and "not valid HTTP" in problem["detail"]
    assert request(port, "GET", "/v1/health", token=None)[0] == 200


def test_compare_page_of_names_with_dollars(server):
    """A context named like matplotlib mathtext (`$\\undefinedmacro$`) is drawn as written:
    the report page, not a 500."""
    port, _ = server
    raw = traffic_named("traffic", "cong$\\undefinedmacro$", "exit")
    status, headers, body = post(port, "/v1/compare", {"workload": raw,
                                                       "settings": {"time_limit": 2}},
                                 headers={"Accept": "text/html"})
    assert status == 200, body[:300]
    assert headers["content-type"].startswith("text/html")
    assert "cong$\\undefinedmacro$" in body.decode()


# -- plans and statistics tied to the workload's content --------------------------------------

def test_a_plan_from_the_service_runs_with_the_workload_file(server, tmp_path):
    """Issue 29: the service planned `request.workload` and recorded a digest `cepplan run`
    did not accept for the same workload's file ("made for another version"). The digest is
    of the content: the plan runs, with its modelled costs, and finds the matches the
    unoptimised plan finds."""
    port, _ = server
    status, _, body = post(port, "/v1/optimize", {"workload": workload("fraud"),
                                                  "settings": {"time_limit": 2}})
    assert status == 200
    plan = tmp_path / "plan.json"
    plan.write_bytes(body)
    runs = {}
    for kind in ("plan", "trivial"):
        done = cepplan("run", plan, EXAMPLES / "fraud" / "events.csv", "-w",
                       EXAMPLES / "fraud" / "workload.json", "-o", tmp_path / kind,
                       "--plan-kind", kind, "-q")
        assert done.returncode == 0 and not done.stderr, done.stderr
        runs[kind] = json.loads((tmp_path / kind / "metrics.json").read_text())
    assert runs["plan"]["matches"] == runs["trivial"]["matches"]
    planned = json.loads(body)["patterns"]
    assert {name: p["expected_cost"] for name, p in runs["plan"]["plan"]["predicted"].items()} \
        == {name: p["detection"]["expected_cost"] for name, p in planned.items()}


def test_statistics_of_another_workload_refused(server, tmp_path):
    """The service checks `workload_digest` as `cepplan optimize --stats` does: statistics
    `cepplan stats` measured for this workload are used, another workload's are a 422 (they
    were used silently)."""
    port, _ = server
    stats = tmp_path / "stats.json"
    done = cepplan("stats", EXAMPLES / "fraud" / "events.csv", "-w",
                   EXAMPLES / "fraud" / "workload.json", "-o", stats, "-q", "--engine", "local")
    assert done.returncode == 0, done.stderr
    measured = json.loads(stats.read_text())
    document = {"workload": workload("fraud"), "stats": measured,
                "settings": {"time_limit": 2}}
    assert post(port, "/v1/optimize", document)[0] == 200
    edited = workload("fraud")
    edited["patterns"][0]["within"] = "7min"
    status, _, body = post(port, "/v1/optimize", {**document, "workload": edited})
    assert status == 422
    [problem] = json.loads(body)["problems"]
    assert problem["file"] == "request.stats" and problem["path"] == "workload_digest"
    assert "another workload" in problem["message"] and "older cepplan" in problem["message"]
