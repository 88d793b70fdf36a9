"""Cancel means cancel: Ctrl-C (SIGINT) and SIGTERM stop cepplan's children and leave earlier
output as it was.

Shared by every command that runs long or writes a directory (both engines, the statistics job):

- `signals_interrupt()`: SIGINT and SIGTERM raise `Interrupted` in the main thread, so `with`
  and `finally` clean-ups run (Python's default SIGTERM kills the process without them);
- `run_child_group(command, ...)`: a child process in its own session and process group, which
  the terminal's Ctrl-C does not reach; on any exception (an interruption included) the whole
  group is stopped — SIGTERM, then SIGKILL after a grace period — before the exception goes on.
  If cepplan itself is killed, the kernel sends the child SIGTERM (Linux parent-death signal);
- `staged_directory(out)`: a path inside a hidden `.cepplan-run-<pid>-*` directory beside
  `out`, renamed over `out` only when the block ends normally; the hidden directory is removed
  however it ends, and `clean_stale_staging` (called by the next run) removes those of a run
  killed by SIGKILL.

The CLI turns `Interrupted` into one line and exit code 128 + signal (130 for SIGINT, 143 for
SIGTERM), after `stop_children()` has stopped any child a library started (pyspark's JVM).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

STAGING_PREFIX = ".cepplan-run-"
OLD_PREFIX = ".cepplan-old-"
SCRATCH_PREFIX = "cepplan-job-"
GRACE_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


class Interrupted(BaseException):
    """A SIGINT or SIGTERM: the command stops, cleaning up as it unwinds."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def describe(self) -> str:
        """One line for the terminal."""
        what = "interrupted (Ctrl-C)" if self.signum == signal.SIGINT else (
            f"stopped by {signal.Signals(self.signum).name}")
        return f"{what}: the work was cancelled and earlier output left as it was"


_received: list[int] = []  # the signals `_raise` turned into `Interrupted` in this block


def _raise(signum: int, _frame: object) -> None:
    # A call into the JVM cut short makes py4j log tracebacks through the *root* logger
    # (module-level `logging.exception`), while unwinding and at exit; cepplan is ending with
    # its one line, so no log record is shown from here on.
    logging.disable(logging.CRITICAL)
    _received.append(signum)
    raise Interrupted(signum)


def raise_if_interrupted() -> None:
    """Raise the interruption received meanwhile, if any. A signal handled inside a callback
    whose exceptions Python ignores (logging's at-fork hook, run while `subprocess` forks)
    loses its `Interrupted`; the places where that matters check again."""
    if _received:
        raise Interrupted(_received[0])


def interrupted() -> bool:
    """A SIGINT or SIGTERM has been received (inside `signals_interrupt`)."""
    return bool(_received)


def interruption(err: BaseException) -> Interrupted | None:
    """`err` itself if it is an `Interrupted`, else the interruption received meanwhile, if
    any: libraries catch our exception and raise their own (pyspark, reading Arrow from the
    JVM, raises a Py4JJavaError "during handling" of it), so what ends the command was still
    the interruption."""
    if isinstance(err, Interrupted):
        return err
    return Interrupted(_received[0]) if _received else None


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise `Interrupted` (main thread only; elsewhere
    the block does nothing). A second signal during clean-up interrupts the clean-up too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    unraisable = sys.unraisablehook
    sys.unraisablehook = _quiet_interruption(unraisable)
    try:
        yield
    finally:
        sys.unraisablehook = unraisable
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _quiet_interruption(hook: Callable) -> Callable:
    """An unraisable-exception hook that prints no "Exception ignored in" traceback for our
    `Interrupted` (raise_if_interrupted raises it again where it matters)."""
    def quiet(info) -> None:
        if not isinstance(info.exc_value, Interrupted):
            hook(info)
    return quiet


def _child_setup() -> None:
    """In the child, before exec: die with cepplan (SIGTERM when the parent goes)."""
    die_with_parent(signal.SIGTERM)


def die_with_parent(signum: int) -> None:
    """This process gets `signum` when its parent ends (Linux parent-death signal)."""
    # not Linux: no parent-death signal, but the group kill on interruption still holds
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)


def run_child_group(command: Sequence[str], *, env: dict[str, str] | None = None,
                    on_line: Callable[[str], None] = lambda line: None) -> int:
    """Run `command` in its own process group, passing each output line (stdout and stderr
    merged) to `on_line`; return its exit code. Any exception stops the whole group first."""
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=env, text=True, bufsize=1, start_new_session=True,
                               preexec_fn=_child_setup)
    try:
        raise_if_interrupted()  # a signal during the fork itself
        assert process.stdout is not None
        for line in process.stdout:
            on_line(line)
        return process.wait()
    except BaseException:
        stop_group(process)
        raise
    finally:
        if process.stdout is not None:
            process.stdout.close()


def stop_group(process: subprocess.Popen, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the process's group, SIGKILL it after `grace` seconds, and reap the process."""
    for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            _kill_stragglers(process.pid)
            return
        except subprocess.TimeoutExpired:
            continue


def stop_children(grace: float = GRACE_SECONDS) -> list[int]:
    """SIGTERM every running child of this process, SIGKILL those left after `grace` seconds;
    return their pids. For children a library started for us (pyspark's JVM, which outlives
    cepplan when interrupted while it starts). Linux (/proc); elsewhere it finds none."""
    children = _children()
    for pid in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_running(p) for p in children):
        time.sleep(0.05)
    for pid in children:
        if _running(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return children


def _children() -> list[int]:
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == me and fields[0] != "Z":
                found.append(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    """Still running (a zombie has stopped). Never reaps: the library that started the child
    waits for it itself (pyspark takes a reaped JVM for one that exited 0 and waits forever)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _kill_stragglers(pgid: int) -> None:
    """Members of the group still running after its leader exited get SIGKILL."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def staged_directory(out: str | Path) -> Iterator[Path]:
    """A path inside a fresh hidden directory beside `out`, for the writer to create (mkdir, or
    a rename); when the block ends normally it is renamed over `out` (an existing `out` is
    swapped out, then removed). The hidden directory is removed however the block ends."""
    out = Path(out).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(out.parent)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out.parent))
    try:
        target = staging / out.name
        yield target
        if not target.is_dir():
            raise FileNotFoundError(f"the run wrote nothing to {target}")
        raise_if_interrupted()
        replace_directory(target, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def replace_directory(source: Path, target: Path) -> None:
    """Rename the directory `source` over `target`, signals held off meanwhile. An existing
    `target` is first renamed to `.cepplan-old-<pid>-<name>` beside it and removed after; if
    cepplan dies in between, `clean_stale_staging` puts it back."""
    held = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(source, 0o777 & ~mask)  # mkdtemp's 0700 -> what mkdir would give
        if not target.is_dir():
            os.replace(source, target)
            return
        old = target.with_name(f"{OLD_PREFIX}{os.getpid()}-{target.name}")
        os.replace(target, old)
        try:
            os.replace(source, target)
        except BaseException:
            os.replace(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


@contextlib.contextmanager
def scratch_directory(prefix: str = SCRATCH_PREFIX) -> Iterator[Path]:
    """A temporary directory `<tmp>/<prefix><pid>-*`, removed when the block ends; those of
    killed cepplan processes are removed first."""
    clean_stale_staging(tempfile.gettempdir(), (prefix,))
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as scratch:
        yield Path(scratch)


def clean_stale_staging(folder: str | Path,
                        prefixes: Sequence[str] = (STAGING_PREFIX, OLD_PREFIX)) -> list[Path]:
    """Tidy `folder` after runs killed with SIGKILL: remove their `.cepplan-run-<pid>-*`
    directories and put back an earlier output caught mid-swap (`.cepplan-old-<pid>-<name>`
    when `<name>` is missing). Only entries of processes that no longer run are touched."""
    touched = []
    for entry in Path(folder).iterdir():
        for prefix in prefixes:
            if not entry.name.startswith(prefix):
                continue
            pid, _, rest = entry.name[len(prefix):].partition("-")
            if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
                continue
            original = entry.with_name(rest)
            if prefix == OLD_PREFIX and rest and not original.exists():
                os.replace(entry, original)
            else:
                shutil.rmtree(entry, ignore_errors=True)
            touched.append(entry)
    return touched


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
