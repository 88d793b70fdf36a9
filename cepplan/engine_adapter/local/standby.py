"""Byte-range workers spawned before the plan is loaded (docs/engine.md, "Workers"): a spawned
worker spends ~0.35 s of CPU importing the engine, which it does here while cepplan loads the
plan and cuts the file, so that it starts matching its range about when cepplan starts its own.
A worker left without a range is told to end (or ends when cepplan closes its pipe).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Sequence
from typing import Any

from cepplan.engine_adapter.local.range_cut import range_count
from cepplan.interrupt import die_with_parent


class Standby:
    """Up to `count` spawned processes waiting for a byte range each (`take`)."""

    def __init__(self, count: int):
        context = multiprocessing.get_context("spawn")
        self._waiting: list[tuple[Any, Any]] = []
        for number in range(1, count + 1):
            mine, theirs = context.Pipe()
            process = context.Process(target=_stand_by, name=f"cepplan-worker-{number}",
                                      args=(theirs, os.getpid()), daemon=True)
            process.start()
            theirs.close()
            self._waiting.append((process, mine))

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
    engine, `workers` > 1), spawned now; None otherwise. Whether the file is plain CSV is
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


def _stand_by(connection: Any, parent: int) -> None:
    """A standby worker: Ctrl-C left to the parent, killed with it, the engine imported;
    then its range, if one comes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:
        return
    from cepplan.engine_adapter.local.byte_ranges import serve_region

    try:
        task = connection.recv()
    except (EOFError, OSError):  # cepplan ended or closed the pipe: no range for it
        return
    connection.close()
    if task is not None:
        serve_region(*task)
