"""`cepplan serve`: the optimizer as an HTTP JSON API on this machine."""

from __future__ import annotations

import os

import typer

from cepplan.errors import InputError


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on. The default "
                             "answers this machine only; 0.0.0.0 opens it to the network."),
    port: int = typer.Option(8787, "--port", min=0, max=65535, help="TCP port (0: any free "
                             "port, printed at start)."),
    workers: int = typer.Option(2, "--workers", min=1, max=64, help="Planning processes; "
                                "health checks stay fast while they work."),
    max_body: int = typer.Option(1 << 20, "--max-body", min=1024, max=1 << 30,
                                 help="Largest request body in bytes (larger: 413)."),
    max_time_limit: float = typer.Option(60.0, "--max-time-limit", min=0.01, help="Largest "
                                         "solver time limit a request may ask, in seconds; "
                                         "whatever it asks, a request's planning is stopped "
                                         "after this plus 5 s (504)."),
    cache_size: int = typer.Option(256, "--cache-size", min=0, max=100_000,
                                   help="Answers to identical requests kept (0: no cache)."),
    shutdown_grace: float = typer.Option(10.0, "--shutdown-grace", min=0, max=3600,
                                         help="On SIGTERM or Ctrl-C, seconds the requests "
                                         "under way may still take; then their planning is "
                                         "stopped (503) and the server exits (code 0)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Log nothing but errors."),
) -> None:
    """Serve the optimizer over HTTP: validate, optimize and compare as a JSON API.

    Endpoints: POST /v1/validate, /v1/optimize and /v1/compare, GET /v1/health, and the
    OpenAPI document at /openapi.json. Errors are RFC 9457 problem details carrying the
    same file, JSON path and problem as the command line. When the environment variable
    CEPPLAN_TOKEN is set, every endpoint but health asks for 'Authorization: Bearer
    <token>' (compared in constant time). Identical requests are answered from a cache.
    Limits on slow and greedy clients: docs/service.md."""
    from cepplan.cli.optimize_cmd import MAX_TIME_LIMIT
    from cepplan.limits import bounded
    from cepplan.service.app import ServiceConfig, create_app
    from cepplan.service.requests import Limits
    from cepplan.service.server import serve

    bounded("--max-time-limit", max_time_limit, low=0, high=MAX_TIME_LIMIT)
    bounded("--shutdown-grace", shutdown_grace, low=0, high=3600, inclusive=True)
    token = os.environ.get("CEPPLAN_TOKEN") or None
    if token is not None and len(token) < 16:
        raise InputError.single("<environment>", "CEPPLAN_TOKEN",
                                "the token must have at least 16 characters")
    config = ServiceConfig(Limits(max_body, max_time_limit), workers, cache_size, token)
    serve(create_app(config), host=host, port=port, workers=workers, grace=shutdown_grace,
          quiet=quiet)
