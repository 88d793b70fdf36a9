"""The real server most service tests share (one per test session: its workers take seconds
to start)."""

from __future__ import annotations

import json

import pytest

from tests.service.serving import MAX_BODY, MAX_TIME_LIMIT, TOKEN, request, running_server


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """(port, working directory) of `cepplan serve` with a token, a 64 KiB body limit and a
    20 s time limit."""
    cwd = tmp_path_factory.mktemp("serve")
    with running_server(cwd, "--workers", "2", "--max-body", str(MAX_BODY),
                        "--max-time-limit", str(MAX_TIME_LIMIT),
                        env={"CEPPLAN_TOKEN": TOKEN}) as (_process, port):
        yield port, cwd


@pytest.fixture(scope="session")
def openapi(server) -> dict:
    """The shared server's OpenAPI document."""
    port, _ = server
    status, _, body = request(port, "GET", "/openapi.json", token=TOKEN)
    assert status == 200
    return json.loads(body)
