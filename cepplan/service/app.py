"""The HTTP app: routes, the bearer-token guard, the planning processes and the answer cache.

FastAPI on uvicorn: a well-kept ASGI stack that gives the OpenAPI document and keeps health
checks on the event loop while planning runs in worker processes.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

from fastapi import FastAPI, Request
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

import cepplan
from cepplan.service import work
from cepplan.service.cache import AnswerCache, request_key
from cepplan.service.openapi import openapi_document
from cepplan.service.problems import ProblemError, problem_body, problem_response
from cepplan.service.requests import (
    DEFAULT_TIME_LIMIT,
    Limits,
    envelope,
    read_json_body,
    replan_envelope,
)
from cepplan.service.workers import Answer, WorkerPool

ANSWER_SECONDS = 5.0  # beyond the server's limit: for reading the workload, writing the answer
OPEN_PATHS = ("/v1/health",)
DESCRIPTION = ("Plan complex event processing workloads: validate a workload, find its cheapest "
               "evaluation plan, compare the planners side by side.")


@dataclass(frozen=True)
class ServiceConfig:
    """How the service runs: its limits, worker processes, cache size and optional token."""

    limits: Limits = field(default_factory=Limits)
    workers: int = 2
    cache_size: int = 256
    token: str | None = None

    @property
    def planning_seconds(self) -> float:
        """The most time a request's worker spends on it, whatever the request asks."""
        return self.limits.max_time_limit + ANSWER_SECONDS


def create_app(config: ServiceConfig) -> FastAPI:
    """The app for `config`; its planning processes live as long as the app runs
    (`app.state.pool`: the server stops their work when it stops)."""
    pool = WorkerPool(config.workers)
    cache = AnswerCache(config.cache_size)
    served = [0]

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        await pool.start()
        try:
            yield
        finally:
            await pool.close()

    app = FastAPI(title="cepplan", version=cepplan.__version__, description=DESCRIPTION,
                  lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.pool = pool
    if config.token:
        app.add_middleware(TokenGuard, token=config.token)

    @app.exception_handler(ProblemError)
    async def _problem(_request: Request, err: ProblemError) -> Response:
        return problem_response(err)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, err: StarletteHTTPException) -> Response:
        return problem_response(ProblemError(err.status_code, str(err.detail),
                                             headers=dict(err.headers or {})))

    @app.exception_handler(Exception)
    async def _internal(_request: Request, _err: Exception) -> Response:
        return Response(problem_body(500, "the service failed on this request"),
                        status_code=500, media_type="application/problem+json")

    async def answer(endpoint: str, request: Request, job: Callable[[dict], Answer], *,
                     planning: bool,
                     check: Callable[[dict, Limits], dict] | None = None) -> Response:
        """Check the request (by `check`, the planning or validation envelope by default),
        then answer from the cache or from a worker, which stops planning when the client
        goes away or the server's limit has passed."""
        body = await read_json_body(request, config.limits)
        checked = (check(body, config.limits) if check
                   else envelope(body, config.limits, planning=planning))
        key = request_key(endpoint, checked)
        cached = cache.get(key)
        if cached is None:
            if planning:
                checked["settings"].setdefault(
                    "time_limit", min(DEFAULT_TIME_LIMIT, config.limits.max_time_limit))
            cached = await unless_abandoned(
                request, pool.run(partial(job, checked), config.planning_seconds))
            if cached[0] < 500:
                cache.put(key, cached)
            hit = "miss"
        else:
            hit = "hit"
        served[0] += 1
        status, media, body = cached
        return Response(body, status_code=status, media_type=media,
                        headers={"X-Cepplan-Cache": hit})

    @app.get("/v1/health", summary="Whether the service is up (never needs a token)")
    async def health() -> dict:
        return {"status": "ok", "version": cepplan.__version__, "workers": config.workers,
                "cached_answers": len(cache), "served": served[0],
                **pool.counts()}

    @app.post("/v1/validate", summary="Check a workload; every problem with its JSON path")
    async def validate(request: Request) -> Response:
        return await answer("validate", request, work.validate, planning=False)

    @app.post("/v1/optimize", summary="The cheapest plan of a workload, as plan.json")
    async def optimize(request: Request) -> Response:
        return await answer("optimize", request, work.optimize, planning=True)

    @app.post("/v1/compare", summary="Every planner side by side, as report.json or, with "
              "'Accept: text/html', the report page")
    async def compare(request: Request) -> Response:
        html = "text/html" in request.headers.get("accept", "")
        return await answer("compare-html" if html else "compare", request,
                            partial(_compare_job, html=html), planning=True)

    @app.post("/v1/replan", summary="A new plan for drifted statistics: what changed, the "
              "modelled gain, the statistics outside the old plan's ranges")
    async def replan(request: Request) -> Response:
        return await answer("replan", request, work.replan, planning=True,
                            check=replan_envelope)

    document = openapi_document(app, config.limits, config.planning_seconds,
                                token=bool(config.token))
    app.openapi = lambda: document  # type: ignore[method-assign]
    return app


class TokenGuard:
    """Every path but health needs 'Authorization: Bearer <token>', compared in constant
    time (a plain ASGI middleware: the request's disconnect still reaches the route)."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                    token.strip().encode(), self.token):
                response = problem_response(ProblemError(
                    401, "send the service's token as 'Authorization: Bearer <token>'",
                    headers={"WWW-Authenticate": "Bearer"}))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def unless_abandoned(request: Request, work: Awaitable[Answer]) -> Answer:
    """The answer of `work`; if the client goes away first, `work` is cancelled (which stops
    its worker) and the answer nobody reads is a 503."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
    if task.done() and not task.cancelled():
        return task.result()
    await asyncio.wait((task,))
    if not task.cancelled():
        task.exception()  # retrieved: its client is gone
    raise ProblemError(503, "the client went away: its planning was stopped")


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _compare_job(checked: dict, *, html: bool) -> Answer:
    return work.compare(checked, html)
