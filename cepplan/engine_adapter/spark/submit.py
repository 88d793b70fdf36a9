"""Submit a generated job with `spark-submit` and read back its metrics.

Uses the `spark-submit` shipped inside the installed pyspark (no PATH set-up needed) and the
current Python for the driver and workers. Spark's own log is shown only with `verbose`; when
the job fails, the cause found in its output (an OutOfMemoryError, the last line of a Python
exception, Spark's error message) is the message of `JobFailed`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pyspark

from cepplan.engine_adapter.spark.jvm_start import FAST_JIT, ClassArchive, class_archive
from cepplan.errors import CepplanError
from cepplan.interrupt import run_child_group
from cepplan.terminal import printable

# Settings chosen for the job (docs/engine.md, "Spark settings"); `conf` overrides them.
JOB_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
    "spark.ui.enabled": "false",  # nobody looks at it; its web server costs start-up time
    # Arrow reads each match group's output as one message off-heap; the JVM's default
    # direct-memory cap (the heap size) is too small for dense patterns (docs/matching.md).
    # In Spark's slot for defaults: a user's spark.*.extraJavaOptions come after, and win
    "spark.driver.defaultJavaOptions": "-XX:+ExitOnOutOfMemoryError -XX:MaxDirectMemorySize=4g",
    "spark.executor.defaultJavaOptions":
        "-XX:+ExitOnOutOfMemoryError -XX:MaxDirectMemorySize=4g",
}
# The user's JVM options from the environment: the JVM reads them before the command line's
USER_JAVA_ENV = ("JAVA_TOOL_OPTIONS", "SPARK_SUBMIT_OPTS")
_PYTHON_ERROR = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)): (.+)$")
_DRIVER_ERROR = "py4j.protocol.Py4JJavaError: "  # followed by the Java exception that ended the job
_NOISE = ("py4j.protocol.Py4JJavaError", "org.apache.spark.SparkException: Job aborted",
          "pyspark.errors.exceptions.captured.PythonException")


class JobFailed(CepplanError):
    """spark-submit exited with an error; the message says why, as far as its output tells."""


def spark_submit() -> str:
    """The spark-submit script of the installed pyspark."""
    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def submit_command(master: str, archive: ClassArchive,
                   conf: Mapping[str, str] | None = None) -> list[str]:
    """`spark-submit --master ... --conf ...` with the job's settings, the JVM options of a
    fast start (`archive` and the client compiler), and `conf` over them. The user's own JVM
    options win over cepplan's: those of the environment (`USER_JAVA_ENV`) are repeated
    after them (of a flag given twice the JVM keeps the last), and spark.driver and
    spark.executor.extraJavaOptions (spark-defaults.conf, `conf`) come after both."""
    driver = " ".join(filter(None, [JOB_SETTINGS["spark.driver.defaultJavaOptions"], FAST_JIT,
                                    *archive.options,
                                    *(os.environ.get(name) for name in USER_JAVA_ENV)]))
    settings = {**JOB_SETTINGS, "spark.driver.defaultJavaOptions": driver, **(conf or {})}
    command = [spark_submit(), "--master", master]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return command


def submit(job_dir: Path, events: list[str], out: Path, *, master: str = "local[*]",
           output_format: str = "jsonl", quiet: bool = False, verbose: bool = False,
           conf: Mapping[str, str] | None = None) -> None:
    """Run `job_dir/job.py` on `events`, writing into `out`; raise `JobFailed` on failure.
    `quiet` shows nothing while it runs; `verbose` shows Spark's own log lines too."""
    _run_job(job_dir, ["--events", *events, "--out", str(out), "--format", output_format],
             master=master, quiet=quiet, verbose=verbose, conf=conf)


def submit_stream(job_dir: Path, follow: str, out: Path, checkpoint: Path, *,
                  trigger: float = 1.0, master: str = "local[*]", quiet: bool = False,
                  verbose: bool = False, conf: Mapping[str, str] | None = None,
                  on_progress: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Run the streaming job `job_dir/job.py` (`generate(..., streaming=True)`) on `follow`
    until the stream ends; raise `JobFailed` on failure. `on_progress` gets the figures of
    each micro-batch (`stream_job._Progress`)."""
    from cepplan.engine_adapter.spark.stream_state import PROGRESS_LINE  # a stream's only

    def progress(line: str) -> bool:
        if on_progress is None or not line.startswith(PROGRESS_LINE):
            return False
        on_progress(json.loads(line.removeprefix(PROGRESS_LINE)))
        return True

    _run_job(job_dir, ["--follow", follow, "--out", str(out), "--checkpoint", str(checkpoint),
                       "--trigger", str(trigger), *(["--progress"] if on_progress else [])],
             master=master, quiet=quiet, verbose=verbose,
             conf={"spark.ui.showConsoleProgress": "false", **(conf or {})},
             taken=progress)


def _run_job(job_dir: Path, arguments: list[str], *, master: str, quiet: bool, verbose: bool,
             conf: Mapping[str, str] | None,
             taken: Callable[[str], bool] = lambda _line: False) -> None:
    """spark-submit `job_dir/job.py` with `arguments`, its output shown as `quiet` and
    `verbose` say (but the lines `taken` takes); `JobFailed` with the cause found in its
    output on failure."""
    archive = class_archive()  # a fast JVM start (jvm_start)
    if archive.writing is not None and not quiet:
        print("cepplan: this first Spark run also saves Spark's classes for a faster start "
              "of the next ones (once)", file=sys.stderr, flush=True)
    command = submit_command(master, archive, {
        "spark.ui.showConsoleProgress": "false" if quiet else "true", **(conf or {})})
    command += ["--py-files", str(job_dir / "runtime.zip"), str(job_dir / "job.py"),
                *arguments]
    if verbose:
        command.append("--verbose")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    tail: deque[str] = deque(maxlen=400)

    def on_line(line: str) -> None:
        if taken(line):
            return
        tail.append(line.rstrip("\n"))
        if verbose or (not quiet and _worth_showing(line)):
            bar = line[:len(line) - len(line.lstrip("\r"))]  # Spark's progress bar redraws
            print(bar + printable(line[len(bar):]), end="", file=sys.stderr, flush=True)

    try:
        code = run_child_group(command, env=env, on_line=on_line)  # stopped whole if interrupted
    except BaseException:
        archive.keep(False)
        raise
    archive.keep(code == 0)
    if code != 0:
        raise JobFailed(failure_message(tail, code))


def failure_message(lines: Iterable[str], code: int) -> str:
    """One clear message from the end of a failed job's output."""
    lines = list(lines)
    ours = [line for line in lines if line.startswith("error:")]
    if ours:  # the job's own lines: printed as they are (the first one's prefix is cepplan's)
        return "\n".join(ours).removeprefix("error: ")
    cause = failure_cause(lines)
    if cause:
        return f"the Spark job failed: {cause}"
    shown = "\n".join(lines[-15:])
    return f"the Spark job failed (exit code {code}); the end of its output:\n{shown}"


def failure_cause(lines: list[str]) -> str | None:
    """The root cause in Spark's output: running out of memory, else the last exception line
    that is not one of Spark's wrappers."""
    for line in lines:
        if "OutOfMemoryError" in line:
            return ("out of memory (java.lang.OutOfMemoryError); give Spark more memory "
                    "(spark.driver.memory / spark.executor.memory) or use a narrower pattern")
    driver_error = max((at for at, line in enumerate(lines) if line.startswith(_DRIVER_ERROR)),
                       default=None)
    if driver_error is not None:  # the exception that ended the job, not a task's aftermath
        for line in lines[driver_error + 1:]:
            found = _PYTHON_ERROR.match(line.removeprefix(": "))
            if found:
                return _short(found)
    for line in reversed(lines):
        found = _PYTHON_ERROR.match(line)
        if found and not line.strip().startswith(_NOISE):
            return _short(found)
    return None


def _short(found: re.Match[str]) -> str:
    """`Exception: message` without the exception's package."""
    return f"{found.group(1).rsplit('.', 1)[-1]}: {found.group(3).strip()}"


def _worth_showing(line: str) -> bool:
    """Our own messages, and Spark's stage progress bar on a terminal; never its log lines."""
    if line.startswith(("cepplan:", "error:", "warning:")):
        return True
    return line.lstrip("\r").startswith("[Stage") and sys.stderr.isatty()
