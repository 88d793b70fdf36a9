"""Submit a generated job with `spark-submit` and read back its metrics.

Uses the `spark-submit` shipped inside the installed pyspark (no PATH set-up needed) and the
current Python for the driver and workers; Spark's own progress goes to the terminal unless
quiet.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from pathlib import Path

import pyspark

from cepplan.errors import CepplanError
from cepplan.interrupt import run_child_group


class JobFailed(CepplanError):
    """spark-submit exited with an error; the message carries the end of its output."""


def spark_submit() -> str:
    """The spark-submit script of the installed pyspark."""
    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def submit(job_dir: Path, events: list[str], out: Path, *, master: str = "local[*]",
           output_format: str = "jsonl", quiet: bool = False, verbose: bool = False) -> None:
    """Run `job_dir/job.py` on `events`, writing into `out`; raise `JobFailed` on failure.
    `quiet` shows nothing while it runs; `verbose` shows Spark's own log lines too."""
    command = [spark_submit(), "--master", master,
               "--conf", "spark.sql.session.timeZone=UTC",
               "--conf", f"spark.ui.showConsoleProgress={'false' if quiet else 'true'}",
               "--py-files", str(job_dir / "runtime.zip"), str(job_dir / "job.py"),
               "--events", *events, "--out", str(out), "--format", output_format]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    tail: deque[str] = deque(maxlen=40)

    def on_line(line: str) -> None:
        tail.append(line.rstrip("\n"))
        if verbose or (not quiet and _worth_showing(line)):
            print(line, end="", file=sys.stderr, flush=True)

    code = run_child_group(command, env=env, on_line=on_line)  # stopped whole if interrupted
    if code != 0:
        errors = [line for line in tail if line.startswith("error:")]
        raise JobFailed("\n".join(errors) if errors else
                        "spark-submit failed; its last lines:\n" + "\n".join(tail))


def _worth_showing(line: str) -> bool:
    """Our own messages, and Spark's stage progress bar on a terminal; never its log lines."""
    if line.startswith(("cepplan:", "error:", "warning:")):
        return True
    return line.lstrip("\r").startswith("[Stage") and sys.stderr.isatty()
