"""Running the app: uvicorn with the connection limits, stopping within a grace period.

On SIGTERM or SIGINT the server stops accepting connections, lets the requests under way
finish for `grace` seconds, then stops their planning (their clients get 503), closes what is
left and exits normally (code 0): a stop signal is how a service is meant to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import signal
import threading
from collections.abc import Iterator
from functools import partial

import uvicorn
from fastapi import FastAPI

from cepplan.errors import InputError
from cepplan.service.http_protocol import ConnectionLimits, GuardedHttpProtocol

CLOSE_SECONDS = 2.0  # after the grace period, for the last answers to go out
RESERVED_FILES = 32  # descriptors kept for the server itself (logs, the loop, the listener)
FILES_PER_WORKER = 4  # a worker's pipe and sentinel, and its replacement's while it starts
MAX_CONNECTIONS = 1024
MIN_CONNECTIONS = 8


class StoppableServer(uvicorn.Server):
    """uvicorn's server, stopping the app's planning `grace` seconds after a stop signal."""

    def __init__(self, config: uvicorn.Config, grace: float):
        super().__init__(config)
        self.grace = grace

    async def shutdown(self, sockets=None) -> None:
        app: FastAPI = self.config.app
        asyncio.get_running_loop().call_later(self.grace, app.state.pool.stop_running)
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's, without raising the signal again once stopped (which would end the
        process as killed by it, or as interrupted: the service stopped as asked)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        stops = (signal.SIGINT, signal.SIGTERM)
        previous = {signum: signal.signal(signum, self.handle_exit) for signum in stops}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def connection_limit(workers: int) -> int:
    """Connections the open-file limit leaves room for, beside the server's own files; at
    most MAX_CONNECTIONS. Refused when it leaves fewer than MIN_CONNECTIONS."""
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    room = (MAX_CONNECTIONS if files == resource.RLIM_INFINITY
            else files - RESERVED_FILES - FILES_PER_WORKER * workers)
    if room < MIN_CONNECTIONS:
        raise InputError.single("<environment>", "open-file limit",
                                f"{files} files (ulimit -n) leave room for {max(room, 0)} "
                                f"connections with {workers} workers; at least "
                                f"{MIN_CONNECTIONS} are needed")
    return min(room, MAX_CONNECTIONS)


def serve(app: FastAPI, *, host: str, port: int, workers: int, grace: float,
          quiet: bool) -> None:
    """Serve `app` until a stop signal, then stop within `grace` seconds."""
    limits = ConnectionLimits(max_connections=connection_limit(workers))
    config = uvicorn.Config(app, host=host, port=port, ws="none", lifespan="on",
                            http=partial(GuardedHttpProtocol, limits=limits),
                            timeout_graceful_shutdown=grace + CLOSE_SECONDS,
                            log_level="warning" if quiet else "info", access_log=not quiet)
    StoppableServer(config, grace).run()
