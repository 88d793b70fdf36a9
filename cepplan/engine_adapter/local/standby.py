"""Byte-range workers started before the plan is loaded (docs/engine.md, "Workers"): cepplan
imports the engine, then forks them (a fork costs milliseconds where a spawned interpreter
spends ~0.4 s of CPU starting and importing the engine), so that each waits for its range, ready,
while cepplan loads the plan and cuts the file. cepplan has no other thread then (else they are
spawned, and import the engine meanwhile). A worker left without a range is told to end (or
ends when cepplan closes its pipe).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Sequence
from typing import Any

from cepplan.engine_adapter.local.range_cut import range_count
from cepplan.interrupt import die_with_parent


class Standby:
    """Up to `count` processes waiting for a byte range each (`take`): forked when this
    process runs no other thread (a fork copies only the thread calling it), else spawned."""

    def __init__(self, count: int):
        method = "fork" if threading.active_count() == 1 else "spawn"
        if method == "fork":  # imported once, here: the forked workers have it too
            import cepplan.engine_adapter.local.byte_ranges
            import cepplan.engine_adapter.local.writer
            import cepplan.engine_adapter.runtime.match_rows  # noqa: F401
        context = multiprocessing.get_context(method)
        self._waiting: list[tuple[Any, Any]] = []
        held = {signal.SIGINT, signal.SIGTERM}
        # blocked across the fork: a forked worker ignores Ctrl-C before it can take one
        # (the parent's handler would raise it there); the parent takes it once they started
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            for number in range(1, count + 1):
                mine, theirs = context.Pipe()
                # a forked worker closes its copies of the parent's ends: each pipe must
                # close (EOF) when the parent closes it or ends
                others = [m for _, m in self._waiting] + [mine] if method == "fork" else []
                process = context.Process(target=_stand_by, name=f"cepplan-worker-{number}",
                                          args=(theirs, os.getpid(), others), daemon=True)
                process.start()
                theirs.close()
                self._waiting.append((process, mine))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)

    def take(self, task: tuple) -> Any | None:
        """A waiting process given `task` (`serve_region`'s arguments), or None if none
        is left."""
        while self._waiting:
            process, connection = self._waiting.pop(0)
            try:
                connection.send(task)
            except OSError:  # it ended (its parent-death check): the next one, or a new one
                continue
            finally:
                connection.close()
            return process
        return None

    def close(self) -> None:
        """The processes left without a range told to end, and reaped."""
        for process, connection in self._waiting:
            with contextlib.suppress(OSError):
                connection.send(None)
            connection.close()
            process.join()
        self._waiting = []


def standby_workers(events: Sequence[str], workers: int, engine: str,
                    master: str | None) -> Standby | None:
    """Workers for an input that may be read by byte range (one local file, the in-process
    engine, `workers` > 1), started now; None otherwise. Whether the file is plain CSV is
    known once the plan is loaded: if not, they end unused."""
    from cepplan.engine_adapter.engine_choice import choose_engine

    if workers < 2 or len(events) != 1 or not os.path.isfile(events[0]):
        return None
    try:
        if choose_engine(engine, master, events) != "local":
            return None
        count = range_count(events[0], workers) - 1
    except Exception:  # the input's own error comes where it is read, with its place
        return None
    return Standby(count) if count > 0 else None


def _stand_by(connection: Any, parent: int, others: Sequence[Any]) -> None:
    """A standby worker: Ctrl-C left to the parent, killed with it, the parent's ends of the
    pipes closed (a forked one's), the engine imported; then its range, if one comes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked one had the parent's handler
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:
        return
    for end in others:
        end.close()
    from cepplan.engine_adapter.local.byte_ranges import serve_region

    try:
        task = connection.recv()
    except (EOFError, OSError):  # cepplan ended or closed the pipe: no range for it
        return
    connection.close()
    if task is not None:
        serve_region(*task)
