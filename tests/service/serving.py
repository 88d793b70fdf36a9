"""A real `cepplan serve` on a free loopback port, the requests the tests send it, and what each
setting accepts (stated apart from the service's own rules)."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
from hypothesis import strategies as st

from tests.conftest import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 120  # the workers import the planner before the server answers
# the shared server of the `server` fixture (conftest.py)
TOKEN = "s3cret-token-for-tests-0123456789"
MAX_BODY = 65536
MAX_TIME_LIMIT = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(cwd: Path, *options: str, env: dict | None = None,
                   preexec_fn: Callable[[], None] | None = None
                   ) -> Iterator[tuple[subprocess.Popen, int]]:
    """`cepplan serve OPTIONS` on a free port, once health answers; stopped at the end."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "cepplan", "serve", "--port", str(port), "-q", *options],
        cwd=cwd, env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec_fn)
    try:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if request(port, "GET", "/v1/health", token=None)[0] == 200:
                    break
            except OSError:
                time.sleep(0.2)
        else:
            process.kill()
            pytest.fail("the server did not start: " + process.communicate()[1].decode()[-2000:])
        yield process, port
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)
        for stream in (process.stdout, process.stderr):
            stream.close()


def request(port: int, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None, token: str | None = None,
            timeout: float = 60) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent = {k: v for k, v in sent.items() if v is not None}
    try:
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read())
    finally:
        conn.close()


def post(port: int, path: str, document, **kwargs) -> tuple[int, dict, bytes]:
    return request(port, "POST", path, json.dumps(document).encode(), **kwargs)


def workload(name: str = "fraud") -> dict:
    return json.loads((EXAMPLES / name / "workload.json").read_text())


# -- what each setting accepts ------------------------------------------------------------------

CHOICES = {"solver": ("auto", "dp", "heuristic"),
           "strategy": ("mixture", "random", "min-latency", "min-cost", "balanced"),
           "search": ("tabu", "sa", "sh", "re", "none"), "sharing": ("subtree", "prefix")}


def _named(names: tuple[str, ...], value) -> bool:
    return isinstance(value, str) and value in names


def accepted_settings(max_time_limit: float) -> dict[str, Callable[[object], bool]]:
    """Per setting, whether it accepts a value, on a server with `--max-time-limit`."""
    return {
        **{name: partial(_named, names) for name, names in CHOICES.items()},
        "k": lambda v: type(v) is int and 0 <= v <= 1000,
        "seed": lambda v: type(v) is int and 0 <= v < 2**63,
        "time_limit": lambda v: type(v) in (int, float) and 0.001 <= v <= max_time_limit,
        "share": lambda v: type(v) is bool,
        "neighborhood": lambda v: v == "edge" or (
            isinstance(v, str) and re.fullmatch("vertex:[0-9]+", v) is not None
            and 2 <= int(v[7:]) <= 64),
    }


NAMES = [n for names in CHOICES.values() for n in names]
ODD = ["NaN", "Infinity", "-inf", "1e400", "", " dp", "DP", "vertex:²", "vertex:٣", "vertex:65",
       "vertex:2", "vertex:064", "vertex:", "edge", "true", "null", "0", "[]", "{}"]
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**80, 2**80) | st.sampled_from([0, 1, 1000, 1001,
                                                                               2**63 - 1, 2**63])
    | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([5e-324, 0.001, 20.0])
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    | st.sampled_from(NAMES + ODD),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6)


# -- the OpenAPI document ------------------------------------------------------------------------

def documented_schema(document: dict, method: str, path: str, status: int,
                      media: str) -> dict:
    """The schema the OpenAPI document gives the answer (KeyError: the answer is not
    documented)."""
    response = document["paths"][path][method.lower()]["responses"][str(status)]
    return response["content"][media.split(";")[0]]["schema"]


def conforms(document: dict, schema: dict, instance) -> None:
    """Validate `instance` against `schema`, whose references point into `document`."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    base = "urn:cepplan-openapi"
    registry = Registry().with_resource(
        base, Resource.from_contents(document, default_specification=DRAFT202012))
    Draft202012Validator({"$ref": base + schema["$ref"]} if "$ref" in schema else schema,
                         registry=registry).validate(instance)
