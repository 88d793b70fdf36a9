"""Progress of the statistics job on a terminal: our stage and, on Spark, the running Spark
stage's tasks.

A rich progress bar over the job's stages, its description refreshed from Spark's status tracker
(completed / total tasks of the active Spark stages) by a background thread. Disabled (a no-op)
when not on a TTY or with --quiet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

STAGES = ("rows, rejects and counts per time step",
          "rates and occurrence models", "keys, regions and selectivity sample", "selectivities")


@contextmanager
def stage_progress(spark: SparkSession | None, enabled: bool) -> Iterator[Callable[[str], None]]:
    """Yield an `on_stage(name)` callback that advances the bar (or does nothing)."""
    if not enabled:
        yield lambda _name: None
        return
    console = Console(stderr=True)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               TextColumn("{task.completed}/{task.total} stages"), TimeElapsedColumn())
    current = {"name": "starting"}
    stop = threading.Event()
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("starting", total=len(STAGES))

        def on_stage(name: str) -> None:
            if current["name"] != "starting":
                progress.advance(task)
            current["name"] = name

        def poll() -> None:
            if spark is None:
                while not stop.wait(0.3):
                    progress.update(task, description=current["name"])
                return
            tracker = spark.sparkContext.statusTracker()
            while not stop.wait(0.3):
                done = total = 0
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if info is not None:
                        done += info.numCompletedTasks
                        total += info.numTasks
                tasks = f"  [dim]Spark tasks {done}/{total}[/dim]" if total else ""
                progress.update(task, description=f"{current['name']}{tasks}")

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield on_stage
        finally:
            stop.set()
            thread.join()
