"""uvicorn's HTTP protocol (httptools, the parser `cepplan serve` runs on) with the bounds one
slow or greedy client must not escape, each answered with a problem document:

- a request head (request line and headers) of at most `head_bytes` and `header_count` fields
  (431), arriving within `head_seconds` of the connection or of the previous answer (408; a
  connection that sent nothing is closed without one);
- an answer the client takes nothing of for `stall_seconds` ends its connection;
- at most `max_connections` open connections: one more closes the connection that has waited
  longest for its head, or is refused (503) when every connection has a request running, so
  health checks keep getting in however many idle connections a client holds;
- a request the parser cannot read (`Content-Length: -1`, a malformed request line or header)
  gets a 400 problem document, where uvicorn's own answer is plain text.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from cepplan.service.problems import MEDIA_TYPE, problem_body

UNPARSABLE = ("the request is not valid HTTP: a malformed request line or header (such as a "
              "negative or non-numeric Content-Length)")
LINGER_SECONDS = 1.0  # a refused connection stays open this long, so its answer gets read


@dataclass(frozen=True)
class ConnectionLimits:
    """The bounds on each connection and on all of them."""

    head_bytes: int = 16 * 1024
    header_count: int = 100
    head_seconds: float = 10.0
    stall_seconds: float = 10.0
    max_connections: int = 1024


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing a head the service refuses."""


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol under `ConnectionLimits`."""

    def __init__(self, *args: Any, limits: ConnectionLimits, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._in_head = True  # the bytes arriving belong to a request head
        self._head_received = 0  # bytes of the head so far, as received
        self._head_size = 0  # bytes of the head so far, as parsed
        self._header_count = 0
        self.waiting_since: float | None = None  # for a head, since when (None: a request runs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None
        self._unsent = 0
        self._refusal: tuple[int, str] | None = None
        self._running: RequestResponseCycle | None = None
        self._refused = False

    # -- connections ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        self._disconnect_cycles()
        super().connection_lost(exc)

    def _make_room(self) -> None:
        """Over the limit: close the connection waiting longest for its head (refused ones
        first); when every other connection has a request running, refuse this one."""
        waiting = [c for c in self.connections
                   if isinstance(c, GuardedHttpProtocol) and c.waiting_since is not None]
        oldest = min(waiting, key=lambda c: (not c._refused, c.waiting_since), default=self)
        if oldest is self:
            self._refuse(503, f"the service has {self.limits.max_connections} connections "
                         "open, its limit: try again later", retry_after=True)
        else:
            oldest.transport.close()

    def _await_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self.waiting_since = self.loop.time()
        self._head_timer = self.loop.call_later(self.limits.head_seconds, self._head_late)

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.waiting_since is None:
            return
        if self._head_received:
            self._refuse(408, f"the request head did not arrive within "
                         f"{self.limits.head_seconds:g} s")
        else:  # idle: closed as a keep-alive connection is, once its last answer is out
            self.transport.close()
            self._watch_unsent()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._stall_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._stall_timer = None

    # -- the head ------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_received += len(data)
        super().data_received(data)
        if self._in_head and self._head_received > self.limits.head_bytes \
                and not self._refused:
            self._refuse(431, f"the request head is larger than {self.limits.head_bytes} "
                         "bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_size = self._header_count = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._count_head(len(url), 0)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4, 1)
        super().on_header(name, value)

    def _count_head(self, size: int, fields: int) -> None:
        self._head_size += size
        self._header_count += fields
        if self._header_count > self.limits.header_count:
            self._refusal = (431, f"the request has more than {self.limits.header_count} "
                             "header fields")
            raise _Refused
        if self._head_size > self.limits.head_bytes:
            self._refusal = (431, f"the request head is larger than "
                             f"{self.limits.head_bytes} bytes")
            raise _Refused

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_received = 0
        self.waiting_since = None
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None
                                                or self.cycle.response_complete):
            self._await_head()

    # -- answers the client does not take ------------------------------------------------------

    def pause_writing(self) -> None:
        super().pause_writing()
        self._watch_unsent()

    def _watch_unsent(self) -> None:
        """While part of an answer waits to be sent, check every `stall_seconds` that the
        client takes some of it (a connection closing waits for its answer to go out)."""
        unsent = self.transport.get_write_buffer_size()
        if self._stall_timer is None and unsent:
            self._unsent = unsent
            self._stall_timer = self.loop.call_later(self.limits.stall_seconds, self._stalled)

    def _stalled(self) -> None:
        """The client took nothing of the answer for `stall_seconds`: end the connection."""
        self._stall_timer = None
        unsent = self.transport.get_write_buffer_size()
        if unsent and unsent >= self._unsent:
            self._reset()
        else:
            self._watch_unsent()

    def _reset(self) -> None:
        """End the connection at once with a reset: what the kernel still holds of the answer
        is dropped too, rather than kept for a client that takes nothing."""
        sock = self.transport.get_extra_info("socket")
        with contextlib.suppress(OSError, AttributeError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._abort()

    def _abort(self) -> None:
        """Close at once; the request running and those queued behind it (pipelined) see
        their client gone before the loop reports the connection lost."""
        self._disconnect_cycles()
        self.transport.abort()

    def _disconnect_cycles(self) -> None:
        """Every request of the connection sees its client gone: the one running (with
        pipelining, not always `self.cycle`, the last one parsed) and those queued."""
        for cycle in (self._running, self.cycle, *(queued for queued, _ in self.pipeline)):
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()
        self.pipeline.clear()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        self._running = cycle
        super()._start_asgi_task(cycle, app)

    # -- refusals ------------------------------------------------------------------------------

    def send_400_response(self, msg: str) -> None:
        """uvicorn calls this when httptools rejects the bytes received (or a callback of ours
        refused the head)."""
        status, detail = self._refusal or (400, UNPARSABLE)
        self._refuse(status, detail)

    def _refuse(self, status: int, detail: str, *, retry_after: bool = False) -> None:
        """Answer with a problem document and close the connection, reading no more of it; it
        closes after a moment, so a client still sending gets the answer, not a reset."""
        self._refused = True
        self.waiting_since = self.waiting_since or self.loop.time()
        if self._head_timer is not None:
            self._head_timer.cancel()
        if any(cycle is not None and not cycle.response_complete
               for cycle in (self._running, self.cycle)):
            self._abort()  # an answer is under way: no second one in its middle
            return
        body = problem_body(status, detail)
        head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode(),
                *(name + b": " + value + b"\r\n"
                  for name, value in self.server_state.default_headers),
                f"content-type: {MEDIA_TYPE}\r\n".encode(),
                f"content-length: {len(body)}\r\n".encode(),
                b"retry-after: 10\r\n" if retry_after else b"", b"connection: close\r\n\r\n"]
        self.flow.pause_reading()
        self.transport.write(b"".join(head) + body)
        self.loop.call_later(LINGER_SECONDS, self._close_refused)

    def _close_refused(self) -> None:
        self.transport.close()
        self._watch_unsent()

