"""`cepplan run PLAN --follow SOURCE -o DIR`: the in-process engine on a live stream, one
micro-batch per trigger interval, until the input ends or SIGINT / SIGTERM asks it to stop
(then what was received is drained and flushed as at the end of the input; exit 0)."""

from __future__ import annotations

import json
import math
import signal
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from cepplan.engine_adapter.local.checkpoint import Checkpoint, job_digest, restore
from cepplan.engine_adapter.local.engine import ROWS_READ, streamable
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.local.stream_output import StreamOutput
from cepplan.engine_adapter.local.stream_skip import StreamSkips, decided_below
from cepplan.engine_adapter.local.stream_source import (
    DirectorySource,
    LinesSource,
    connected,
)
from cepplan.engine_adapter.runtime.job import Job, job_from_json
from cepplan.engine_adapter.runtime.match_rows import match_layouts
from cepplan.engine_adapter.runtime.timed_out_counts import with_timed_out
from cepplan.engine_adapter.runtime.timed_out_output import output_folders
from cepplan.errors import InputError
from cepplan.fileio import write_bytes_atomic
from cepplan.interrupt import scratch_directory
from cepplan.sources.time_text import time_writer


class Adaptation(Protocol):
    """What the stream calls on an adaptive run (`cepplan.adaptive.adaptation.Adaptation`,
    which sits above the engine: it re-plans and switches the matcher's plan)."""

    def attach(self, matcher: StreamMatcher) -> None: ...

    def after_batch(self, matcher: StreamMatcher, number: int, events: int,
                    seconds: float) -> None: ...

    def in_force(self, first: dict[str, Any]) -> dict[str, Any]: ...

    def last_switch(self) -> str: ...

    def figures(self) -> dict[str, Any]: ...

REJECT_UNREADABLE = "unreadable file"  # a followed file the source cannot read


def follow_stream(data: dict[str, Any], source: str, out: Path, plan_file: str, *,
                  trigger: float = 1.0, progress: bool = False,
                  bounds: dict[str, Any] | None = None,
                  warn: Callable[[str], None] = print,
                  checkpoint: Path | None = None,
                  adaptation: Adaptation | None = None,
                  output_format: str = "jsonl") -> dict[str, Any]:
    """Run the job on the stream `source` (a directory or '-'); matches, late events and,
    at the end, metrics.json in `out` (with `bounds`, the patterns' latency bounds, beside
    the detection latency measured). With `checkpoint` (a directory source), the state is
    recorded there per micro-batch and a killed run continues from it. With `adaptation`,
    the plan is re-planned and switched when the statistics drift. With `output_format`
    "parquet", matches are written as Parquet parts per micro-batch. Returns the metrics."""
    job = check_streamable(data, plan_file)
    reader = data["reader"]
    delay = float(data.get("options", {}).get("max_delay", 0.0))
    positional = not reader["source"].get("id_column")
    matcher = StreamMatcher(job, delay, None, positional_ids=positional)
    meter = _Progress(progress, adaptation,
                      time_writer(reader["source"].get("time_format"), reader["time_unit"]))
    if adaptation is not None:
        adaptation.attach(matcher)
    batches = 0
    with scratch_directory() as spool, stop_on_signal() as stop:
        feed = _source(source, reader, spool)
        saver = (Checkpoint(checkpoint, job_digest(data), source, out, output_format)
                 if checkpoint else None)
        resumed = saver.load() if saver else None
        if resumed is not None:
            restore(matcher, resumed)
            feed.seen.update(resumed["files_read"])
            batches, meter.state_max = (resumed["figures"]["micro_batches"],
                                        resumed["figures"]["state_rows_max"])
            (out / "metrics.json").unlink(missing_ok=True)  # a finished run's: written anew
        elif saver:  # before the outputs exist: a kill from here on can be resumed
            saver.save(matcher, {}, [], _figures(0, meter))
        output = StreamOutput(out, {k: list(v) for k, v in data["types"].items()},
                              resume=resumed["output_bytes"] if resumed else None,
                              log=saver.latency_log if saver else None,
                              patterns=[p.name for p in job.patterns],
                              parquet=match_layouts(job) if output_format == "parquet" else None,
                              folders=output_folders(data["patterns"]))
        skips = StreamSkips(data, job, output) if data.get("after_match") else None
        if skips is not None and resumed is not None:
            skips.restore(resumed["after_match"])
        matcher.writer = skips or output
        while True:
            taken = feed.take(trigger)
            clock, read_before = time.perf_counter(), matcher.counts[ROWS_READ]
            for path, arrived in taken:
                late = matcher.add(read_counted(path, reader, matcher, warn), arrived)
                if late is not None:
                    output.write_late(late)
                if isinstance(feed, LinesSource):  # a spooled micro-batch: read, not kept
                    Path(path).unlink()
            state = matcher.advance()
            if skips is not None:
                skips.release(decided_below(matcher))
            output.flush()
            batches += 1
            if adaptation is not None:
                adaptation.after_batch(matcher, batches, matcher.counts[ROWS_READ] -
                                       read_before, time.perf_counter() - clock)
            meter.show(matcher, output, state)
            if saver:
                saver.save(matcher, output.sync(), sorted(feed.seen), _figures(batches, meter),
                           skips.state() if skips is not None else None)
            if feed.ended or stop():
                break
        matcher.advance(final=True)
        if skips is not None:
            skips.release(math.inf)
        output.flush()
        output.close()
        meter.done()
    metrics = matcher.metrics(adaptation.in_force(data) if adaptation is not None else data)
    if skips is not None:
        metrics["after_match_skipped"] = skips.dropped
    metrics["stream"] = {"max_delay": delay, "trigger_seconds": trigger,
                         "micro_batches": batches, "watermark": _finite(matcher.watermark),
                         "late_events": dict(matcher.late),
                         "state_rows_max": meter.state_max, "stopped_by_signal": stop(),
                         "detection_latency_seconds": output.latency_figures(),
                         "latency_bound": bounds or {},
                         **(adaptation.figures() if adaptation is not None else {})}
    with_timed_out(metrics, data["patterns"])
    write_bytes_atomic(out / "metrics.json", json.dumps(metrics, indent=2).encode())
    return metrics


def check_streamable(data: dict[str, Any], plan_file: str) -> Job:
    """The job of `data`, if a stream can run it (both engines); else an `InputError`."""
    job = job_from_json(data)
    if not streamable(job, counted=True) or not data.get("reader"):
        raise InputError.single(plan_file, "", "--follow runs plans whose patterns all have "
                                "a window and read events only (not another pattern's "
                                "matches, contexts or consumer queries)")
    preferring = [n for n, rule in (data.get("after_match") or {}).items() if rule.get("prefer")]
    if preferring:
        raise InputError.single(plan_file, f"patterns.{preferring[0]}", "prefer is applied to "
                                "event files only: a stream cannot release a match before "
                                "every longer one from its first event has had its window to "
                                "complete (run it on event files, or drop prefer)")
    return job


def _figures(batches: int, meter: _Progress) -> dict[str, int]:
    """The stream's own figures a checkpoint carries over a restart."""
    return {"micro_batches": batches, "state_rows_max": meter.state_max}


def _source(source: str, reader: dict[str, Any], spool: Path) -> DirectorySource | LinesSource:
    fmt = reader["source"]["format"]
    if source != "-" and not source.startswith("tcp://"):
        return DirectorySource(source)
    if fmt not in ("csv", "jsonl"):
        raise InputError.single(source, "", f"a stream of lines is read as CSV or JSON lines; "
                                f"the workload's source is {fmt}")
    header = fmt == "csv" and reader["source"].get("header", True)
    stream = connected(source) if source != "-" else None
    return LinesSource(spool, "." + fmt, header, stream)


def read_counted(path: str, reader: dict[str, Any], matcher: StreamMatcher,
                 warn: Callable):
    """The file's batches; a file the source cannot read is counted and warned of, and the
    stream goes on."""
    try:
        yield from read_batches([path], **reader)
    except InputError as err:
        matcher.counts[REJECT_UNREADABLE] += 1
        warn(f"{path}: not read: {err.problems[0].message if err.problems else err}")


@contextmanager
def stop_on_signal(on_stop: Callable[[], None] = lambda: None):
    """Within the block the first SIGINT / SIGTERM asks the stream to stop (drained, exit 0;
    `on_stop` is called in the handler); a second one interrupts as anywhere else."""
    asked: list[int] = []
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def ask(signum: int, _frame: object) -> None:
        asked.append(signum)
        on_stop()
        for number, handler in previous.items():
            signal.signal(number, handler)

    for number in previous:
        signal.signal(number, ask)
    try:
        yield lambda: bool(asked)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class _Progress:
    """A progress line on a terminal, rewritten per micro-batch: events/s, watermark (as
    `time_text` writes times: the input's own), matches, late events, state rows, detection
    latency p50/p99."""

    def __init__(self, shown: bool, adaptation: Adaptation | None = None,
                 time_text: Callable[[float], str] = "ts {:.15g}".format):
        self.shown = shown and sys.stderr.isatty()
        self.adaptation = adaptation
        self.time_text = time_text
        self.start = time.monotonic()
        self.state_max = 0

    def show(self, matcher: StreamMatcher, output: StreamOutput, state: int) -> None:
        self.state_max = max(self.state_max, state)
        if not self.shown:
            return
        import numpy as np

        rows = matcher.counts.get(ROWS_READ, 0)
        rate = rows / max(time.monotonic() - self.start, 1e-9)
        matches = sum(t.matches for t in matcher.totals.values())
        recent = list(output.recent.values())
        values = np.concatenate(recent) if recent else np.empty(0)
        latency = (float(np.percentile(values, 50)), float(np.percentile(values, 99))) \
            if len(values) else None
        watermark = _finite(matcher.watermark)
        sys.stderr.write("\r" + progress_text(
            rate, "-" if watermark is None else self.time_text(watermark), matches,
            sum(matcher.late.values()), state, latency) +
            f"{self.adaptation.last_switch() if self.adaptation else ''}\x1b[K")
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def progress_text(rate: float, watermark: str, matches: int, late: int, state: int,
                  latency: tuple[float, float] | None) -> str:
    """A stream's progress line (in-process or on Spark): events/s, the watermark in the
    input's time, matches, late events, the events kept and detection latency p50/p99."""
    shown = "-" if latency is None else f"{latency[0]:.2f}/{latency[1]:.2f}s"
    return (f"{rate:,.0f} events/s  watermark {watermark}  matches {matches:,}  "
            f"late {late:,}  state {state:,} rows  latency p50/p99 {shown}")


def _finite(value: float) -> float | None:
    return value if value not in (float("inf"), float("-inf")) else None
