"""The SparkSession the statistics job runs in (CLI and benchmark): UTC session time zone, so
formatted timestamps mean the same everywhere; Arrow for the small tables brought to the driver.

Started from a helper thread, so that Ctrl-C stays cepplan's (docs/reliability.md): started from
the main thread, pyspark's SparkContext installs its own SIGINT handler, which calls into the
JVM from inside the running call (py4j: "reentrant call") and raises `KeyboardInterrupt` with
py4j tracebacks. And an interruption during the JVM's start-up no longer makes pyspark delete
the folder the JVM is about to write its port to (the JVM printed a `NoSuchFileException`):
the start-up is left alone, the JVM stopped, then the helper thread finishes its own clean-up.
The JVM's output comes through cepplan (`_relay`): shown only with `verbose` (`cepplan stats
-v`), and never once interrupted (a JVM whose Python end went away mid-transfer logs Java stack
traces before it is stopped). Without it, cepplan's own lines are all the command prints.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import IO

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from cepplan.interrupt import interrupted, stop_children

START_CLEANUP_SECONDS = 5.0  # after an interruption: pyspark's own tidying once the JVM is gone


def stats_session(master: str = "local[*]", *, driver_memory: str = "4g",
                  console_progress: bool = False, shuffle_partitions: int = 0,
                  verbose: bool = False) -> SparkSession:
    """Start (or reuse) a session for the statistics job. The job's aggregates are small, so
    `shuffle_partitions` 0 means 4 per core (Spark's 200 cost more in task overhead locally).
    `verbose` shows the JVM's own log (at level INFO); otherwise nothing of it."""
    conf = (SparkConf().setMaster(master).setAppName("cepplan-stats")
            .set("spark.sql.session.timeZone", "UTC")
            .set("spark.sql.execution.arrow.pyspark.enabled", "true")
            .set("spark.driver.memory", driver_memory)
            .set("spark.ui.showConsoleProgress", str(console_progress).lower())
            .set("spark.ui.enabled", "false"))
    session = _start_off_main_thread(conf, verbose)
    session.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    partitions = shuffle_partitions or 4 * session.sparkContext.defaultParallelism
    session.conf.set("spark.sql.shuffle.partitions", str(partitions))
    return session


def _start_off_main_thread(conf: SparkConf, verbose: bool) -> SparkSession:
    """`_start(conf, verbose)` in a helper thread while the main thread waits, ready for signals.
    Interrupted meanwhile: stop the JVM, let the helper finish, then go on."""
    outcome: dict[str, object] = {}
    done = threading.Event()  # not Thread.join: one cut short by a signal returns early after

    def start() -> None:
        try:
            outcome["session"] = _start(conf, verbose)
        except BaseException as err:  # handed to the main thread
            outcome["error"] = err
        finally:
            done.set()

    threading.Thread(target=start, name="cepplan-spark-start", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except BaseException:
        stop_children()
        done.wait(START_CLEANUP_SECONDS)
        raise
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["session"]  # type: ignore[return-value]


def _start(conf: SparkConf, verbose: bool) -> SparkSession:
    """A session on `conf`; a new JVM has its output read by `_relay` (shown if `verbose`)."""
    if SparkContext._active_spark_context is None:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": subprocess.PIPE,
                                                     "stderr": subprocess.STDOUT})
        threading.Thread(target=_relay, args=(gateway.proc.stdout, verbose),
                         name="cepplan-jvm-output", daemon=True).start()
        SparkContext(conf=conf, gateway=gateway)
    return SparkSession.builder.config(conf=conf).getOrCreate()


def _relay(stream: IO[bytes], show: bool) -> None:
    """Read the JVM's output lines (so its pipe never fills), copying them to our stderr if
    `show`, until cepplan is interrupted."""
    for line in iter(stream.readline, b""):
        if show and not interrupted():
            sys.stderr.buffer.write(line)
            sys.stderr.flush()
