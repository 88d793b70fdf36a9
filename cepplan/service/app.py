"""The HTTP app: routes, the bearer-token guard, the worker pool and the answer cache.

FastAPI on uvicorn: a well-kept ASGI stack that gives the OpenAPI document for free and keeps
health checks on the event loop while planning runs in a process pool.
"""

from __future__ import annotations

import asyncio
import hmac
import multiprocessing
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

import cepplan
from cepplan.report.compare import TIME_LIMITS
from cepplan.service import work
from cepplan.service.cache import AnswerCache, request_key
from cepplan.service.problems import ProblemError, problem_body, problem_response
from cepplan.service.requests import Limits, envelope, read_json_body

DEFAULT_TIME_LIMIT = 10.0
GRACE_SECONDS = 30.0  # beyond a request's own time limit, for loading and writing the answer
OPEN_PATHS = ("/v1/health",)


@dataclass(frozen=True)
class ServiceConfig:
    """How the service runs: its limits, worker processes, cache size and optional token."""

    limits: Limits = field(default_factory=Limits)
    workers: int = 2
    cache_size: int = 256
    token: str | None = None


def create_app(config: ServiceConfig) -> FastAPI:
    """The app for `config`; its worker pool lives as long as the app runs."""
    state: dict = {"pool": None, "cache": AnswerCache(config.cache_size), "served": 0}

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        context = multiprocessing.get_context("spawn")  # no fork of a threaded server
        with ProcessPoolExecutor(config.workers, mp_context=context) as pool:
            state["pool"] = pool
            await asyncio.gather(*(asyncio.get_running_loop().run_in_executor(pool, _warm)
                                   for _ in range(config.workers)))
            yield
        state["pool"] = None

    app = FastAPI(title="cepplan", version=cepplan.__version__, lifespan=lifespan,
                  description="Plan complex event processing workloads: validate a workload, "
                  "find its cheapest evaluation plan, compare the planners side by side.")

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]):
        if config.token and request.url.path not in OPEN_PATHS:
            sent = request.headers.get("authorization", "")
            scheme, _, token = sent.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                    token.strip().encode(), config.token.encode()):
                return problem_response(ProblemError(
                    401, "send the service's token as 'Authorization: Bearer <token>'",
                    headers={"WWW-Authenticate": "Bearer"}))
        try:
            return await call_next(request)
        except ProblemError as err:
            return problem_response(err)

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

    async def answer(endpoint: str, request: Request, job: Callable, *, planning: bool,
                     searches: int = 1) -> Response:
        """Check the request, then answer from the cache or from a worker; `searches` is how
        many planner runs (each bounded by the time limit) the job makes."""
        checked = envelope(await read_json_body(request, config.limits), config.limits,
                           planning=planning)
        key = request_key(endpoint, checked)
        cached = state["cache"].get(key)
        if cached is None:
            limit = checked["settings"].setdefault(
                "time_limit", min(DEFAULT_TIME_LIMIT, config.limits.max_time_limit))
            loop = asyncio.get_running_loop()
            try:
                cached = await asyncio.wait_for(
                    loop.run_in_executor(state["pool"], partial(job, checked)),
                    timeout=limit * searches + GRACE_SECONDS)
            except TimeoutError:
                raise ProblemError(504, f"planning did not finish within its time limit of "
                                   f"{limit:g} s") from None
            if cached[0] < 500:
                state["cache"].put(key, cached)
            hit = "miss"
        else:
            hit = "hit"
        state["served"] += 1
        status, media, body = cached
        return Response(body, status_code=status, media_type=media,
                        headers={"X-Cepplan-Cache": hit})

    @app.get("/v1/health", summary="Whether the service is up (never needs a token)")
    async def health() -> dict:
        return {"status": "ok", "version": cepplan.__version__, "workers": config.workers,
                "cached_answers": len(state["cache"]), "served": state["served"]}

    body_doc = {"requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "required": ["workload"],
        "properties": {"workload": {"type": "object", "description": "a workload.json"},
                       "stats": {"type": "object", "description": "a stats.json (optional)"},
                       "settings": {"type": "object", "description":
                                    "solver, k, strategy, seed, time_limit (s), share"}}}}}}}

    @app.post("/v1/validate", summary="Check a workload; every problem with its JSON path",
              openapi_extra=body_doc)
    async def validate(request: Request) -> Response:
        return await answer("validate", request, work.validate, planning=False)

    @app.post("/v1/optimize", summary="The cheapest plan of a workload, as plan.json",
              openapi_extra=body_doc)
    async def optimize(request: Request) -> Response:
        return await answer("optimize", request, work.optimize, planning=True)

    @app.post("/v1/compare", summary="Every planner side by side, as report.json or, with "
              "'Accept: text/html', the report page", openapi_extra=body_doc)
    async def compare(request: Request) -> Response:
        html = "text/html" in request.headers.get("accept", "")
        return await answer("compare-html" if html else "compare", request,
                            partial(_compare_job, html=html), planning=True,
                            searches=TIME_LIMITS)

    return app


def _compare_job(checked: dict, *, html: bool):
    return work.compare(checked, html)


def _warm() -> None:
    """Import the planner in a worker before the first request needs it."""
    import cepplan.planner.optimize  # noqa: F401
