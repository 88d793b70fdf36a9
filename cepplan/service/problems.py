"""Errors as RFC 9457 problem details (`application/problem+json`), carrying the same
file / JSON path / problem triples the command line prints."""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from starlette.responses import Response

from cepplan.errors import Problem

MEDIA_TYPE = "application/problem+json"

TITLES = {400: "Bad request", 401: "Unauthorized", 404: "Not found",
          405: "Method not allowed", 408: "Request too slow", 413: "Request body too large",
          415: "Unsupported media type", 422: "Invalid input",
          431: "Request head too large", 500: "Internal error", 503: "Service unavailable",
          504: "Planning took too long"}


class ProblemError(Exception):
    """Raised anywhere in a request to answer with a problem document."""

    def __init__(self, status: int, detail: str, problems: Iterable[Problem] = (),
                 headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.problems = tuple(problems)
        self.headers = headers or {}


def problem_body(status: int, detail: str, problems: Iterable[Problem] = ()) -> bytes:
    """The problem document: type, title, status, detail and the input problems."""
    document = {"type": "about:blank", "title": TITLES.get(status, "Error"), "status": status,
                "detail": detail}
    listed = [{"file": p.file, "path": p.path, "message": p.message} for p in problems]
    if listed:
        document["problems"] = listed
    return orjson.dumps(document)


def problem_response(error: ProblemError) -> Response:
    return Response(problem_body(error.status, error.detail, error.problems),
                    status_code=error.status, media_type=MEDIA_TYPE, headers=error.headers)
