"""Planning processes that can be stopped: no planning outlives its request.

Each worker is a spawned process (the threaded server is never forked) that runs one job at a
time, sent over a pipe. A job that outlives its time, whose client has gone, or that still runs
when the service stops has its process killed (SIGKILL: planning holds nothing worth a clean-up)
and a fresh process started in its place, so the next request finds a worker whatever the
planner does. Waiting for an answer is a pipe watched by the event loop, never a thread.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from cepplan.interrupt import die_with_parent
from cepplan.service.problems import ProblemError

Answer = tuple[int, str, bytes]
Job = Callable[[], Answer]  # picklable: a module-level function, or a partial of one
READY = "ready"
START_SECONDS = 300.0  # a worker that has not imported the planner by then is started again
RETRY_SECONDS = 1.0  # between attempts to start a worker (out of processes or descriptors)
STOPPING = ("the service is stopping: the request is not planned (any planning under way was "
            "cancelled); send it again later")
logger = logging.getLogger("uvicorn.error")


class WorkerGone(Exception):
    """The worker process ended while it had a job (killed, crashed, out of memory)."""


class DeadBeforeJob(WorkerGone):
    """The worker process had ended before it was given the job."""


@dataclass(eq=False)  # each worker is itself: kept in sets
class _Worker:
    process: BaseProcess
    conn: Connection
    _ended: asyncio.Future | None = None

    def stop(self) -> asyncio.Future:
        """Kill the process; the future is done when it has ended and is released (the same
        future for every caller: the loop watches a descriptor for one waiter only)."""
        self.process.kill()
        if self._ended is None:
            self._ended = asyncio.ensure_future(self._release())
        return self._ended

    async def _release(self) -> None:
        await _readable(self.process.sentinel)
        self.process.join()
        self.process.close()
        self.conn.close()

    async def run(self, job: Job, seconds: float) -> Answer | str:
        """The job's answer, or the traceback of its exception; TimeoutError after `seconds`,
        WorkerGone if the process ends."""
        try:
            self.conn.send(job)
        except (BrokenPipeError, ConnectionResetError):
            raise DeadBeforeJob from None
        await asyncio.wait_for(_readable(self.conn.fileno()), seconds)
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError):
            raise WorkerGone from None


class WorkerPool:
    """`size` planning processes. `run` gives a job to a free one and answers for it."""

    def __init__(self, size: int):
        self.size = size
        self._planning = self._waiting = self._stopped_jobs = 0
        self._context = multiprocessing.get_context("spawn")
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._busy: set[_Worker] = set()
        self._workers: set[_Worker] = set()
        self._starting: set[asyncio.Task] = set()
        self._stopping = False

    def counts(self) -> dict[str, int]:
        """What health reports: workers ready for a request, requests planning, waiting for
        a worker, and those whose planning was stopped (over the server's limit, abandoned
        by their client, the service stopping, or the process died)."""
        return {"idle": self._idle.qsize(), "planning": self._planning,
                "waiting": self._waiting, "stopped": self._stopped_jobs}

    async def start(self) -> None:
        """Start every worker and wait until each has imported the planner."""
        for worker in await asyncio.gather(*(self._start_one() for _ in range(self.size))):
            self._idle.put_nowait(worker)

    async def run(self, job: Job, seconds: float) -> Answer:
        """The job's answer from a free worker. Past `seconds` of planning: 504; the service
        stopping: 503; the process dying: 500. In each case, and when the caller is cancelled
        (its client went away), the worker is killed and replaced; a worker found dead
        before it took the job (killed while idle) is replaced and another takes the job."""
        while True:
            worker = await self._free_worker()
            self._busy.add(worker)
            self._planning += 1
            try:
                reply = await worker.run(job, seconds)
                break
            except DeadBeforeJob:
                self._replace(worker)
            except BaseException as err:
                self._replace(worker)
                self._stopped_jobs += 1
                if isinstance(err, TimeoutError):
                    raise ProblemError(504, f"planning did not finish within {seconds:g} s, "
                                       "the server's limit: it was stopped") from None
                if isinstance(err, WorkerGone):
                    self._refuse_when_stopping()
                    raise ProblemError(500, "the planning process ended unexpectedly (out "
                                       "of memory?); send the request again") from None
                raise
            finally:
                self._planning -= 1
                self._busy.discard(worker)
        self._idle.put_nowait(worker)
        if isinstance(reply, str):  # the job raised: its traceback
            logger.error("planning failed:\n%s", reply)
            raise ProblemError(500, "the service failed on this request")
        return reply

    async def _free_worker(self) -> _Worker:
        """The next free worker (503 once the service is stopping)."""
        self._refuse_when_stopping()
        self._waiting += 1
        try:
            worker = await self._idle.get()
        finally:
            self._waiting -= 1
        if self._stopping:
            self._idle.put_nowait(worker)
            self._refuse_when_stopping()
        return worker

    def stop_running(self) -> None:
        """The service is stopping: kill the workers that plan (their requests get 503) and
        refuse new jobs."""
        self._stopping = True
        for worker in list(self._busy):
            worker.process.kill()

    async def close(self) -> None:
        """Kill every worker and wait for each to end."""
        self._stopping = True
        for task in self._starting:
            task.cancel()
        await asyncio.gather(*(worker.stop() for worker in list(self._workers)),
                             *self._starting, return_exceptions=True)

    def _refuse_when_stopping(self) -> None:
        if self._stopping:
            raise ProblemError(503, STOPPING, headers={"Retry-After": "10"})

    def _replace(self, worker: _Worker) -> None:
        """Kill `worker` now; start another in the background unless the service stops."""
        self._workers.discard(worker)
        task = asyncio.ensure_future(self._restart(worker.stop()))
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def _restart(self, ended: asyncio.Future) -> None:
        try:
            await asyncio.shield(ended)
        except asyncio.CancelledError:
            await ended  # the killed worker is released before the pool closes
            raise
        while not self._stopping:
            try:
                self._idle.put_nowait(await self._start_one())
                return
            except (OSError, WorkerGone, TimeoutError) as err:
                logger.warning("could not start a planning process (%s); trying again", err)
                await asyncio.sleep(RETRY_SECONDS)

    async def _start_one(self) -> _Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(theirs, os.getpid()),
                                        daemon=True, name="cepplan-planner")
        try:
            process.start()
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        worker = _Worker(process, ours)
        self._workers.add(worker)
        try:
            await asyncio.wait_for(_readable(ours.fileno()), START_SECONDS)
            if ours.recv() != READY:
                raise WorkerGone
        except BaseException as err:
            self._workers.discard(worker)
            await asyncio.shield(worker.stop())
            if isinstance(err, EOFError):
                raise WorkerGone from None
            raise
        return worker


async def _readable(fileno: int) -> None:
    """Wait until `fileno` can be read (data, or the other end closed)."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(fileno, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(fileno)
        os.set_blocking(fileno, True)  # the loop made it non-blocking; the pipe reads whole


def _serve(conn: Connection, server: int) -> None:
    """A worker's life: import the planner, then answer jobs until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group: the server decides
    die_with_parent(signal.SIGKILL)
    if os.getppid() != server:  # the server ended before the line above
        return
    import cepplan.planner.optimize  # noqa: F401  (before the first request needs it)

    conn.send(READY)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer: Answer | str = job()
        except Exception:
            answer = traceback.format_exc()
        conn.send(answer)
