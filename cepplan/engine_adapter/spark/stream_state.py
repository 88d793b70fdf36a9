"""The Structured Streaming job's stateful step: per micro-batch, the in-process stream
matcher (`local/stream.py`, the same code as `cepplan run --follow`) on what arrived, its
state in Spark's state store, its output as rows of a JSON-lines file sink.

Shipped in the job's runtime zip. The step runs once per micro-batch on one group that holds
the whole stream: the files that arrived (each whole, read in name order by the in-process
reader, so rejects are counted as in a batch run and row ids are positions in arrival order)
or the lines a socket delivered, and any end-of-stream marker. The matcher's state (the
watermark, the events of the widest window plus `max_delay`, the counts, count windows'
next positions, after-match skips' held matches and resume points) is encoded as the
in-process checkpoint encodes it and kept in the group's state: Spark's checkpoint makes a
restart continue from the last committed micro-batch, with the sink's log keeping each
output once (docs/engine.md, "Live streams on Spark").
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import types as T

from cepplan.engine_adapter.local.checkpoint import decode, encode, restore
from cepplan.engine_adapter.local.engine import ROWS_READ
from cepplan.engine_adapter.local.follow import read_counted
from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.local.stream_skip import StreamSkips, decided_below
from cepplan.engine_adapter.runtime.arrivals import MatchArrivals, late_lines
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput, job_from_json
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.engine_adapter.runtime.timed_out_output import output_folders
from cepplan.engine_adapter.spark.stream_plans import PlanRefused, plan_to_switch

MATCHES, LATE, LATENCY = "matches", "late-events", "latency"
PROGRESS = "progress"  # per micro-batch, a few figures (small: a stream may run for days)
PROGRESS_LINE = "cepplan-progress: "  # the job's progress on its output, for `cepplan run`
LATENCY_SAMPLE = 200  # detection latencies a progress row keeps (evenly spaced ranks)
FIGURES = "figures"  # metrics.json's figures, once the stream has ended
# What reaches the step: per file (or socket line) its name ("" for a line), a line's number
# in its micro-batch (grouping does not keep the order), its arrival wall time, its text, and
# whether it is the end-of-stream marker or a plan to switch to (`stream_plans.py`)
INPUT = T.StructType([T.StructField("key", T.IntegerType()),
                      T.StructField("source", T.StringType()),
                      T.StructField("line", T.LongType()),
                      T.StructField("arrived", T.DoubleType()),
                      T.StructField("value", T.StringType()),
                      T.StructField("end", T.BooleanType()),
                      T.StructField("plan", T.BooleanType())])
OUTPUT = T.StructType([T.StructField("output", T.StringType()),
                       T.StructField("value", T.StringType())])
STATE = T.StructType([T.StructField("matcher", T.BinaryType())])
# an adaptive stream's (job.json's `adaptive`): the online statistics' state beside
ADAPTIVE_STATE = T.StructType([*STATE.fields, T.StructField("drift", T.BinaryType())])


def state_schema(data: dict[str, Any]) -> T.StructType:
    """The group state of the job `data`'s stream."""
    return ADAPTIVE_STATE if data.get("adaptive") else STATE


def key_attributes(job: Job) -> tuple[str, ...]:
    """The attributes every pattern partitions by (`partition_by`): a match's events share
    their values, so the stream can be matched apart per value (none: one group)."""
    common = set.intersection(*(set(p.partition_by) for p in job.patterns))
    return tuple(sorted(common))


def key_group(rows: Columns, attributes: tuple[str, ...], groups: int) -> np.ndarray:
    """Each row's key group in [0, groups): a hash of its `attributes`' values as text, the
    same in every process (a missing attribute counts as a missing value)."""
    keys = pd.DataFrame({a: _key_text(rows.data[a]) if a in rows.data
                         else np.full(len(rows), "None", dtype=object) for a in attributes})
    return (pd.util.hash_pandas_object(keys, index=False).to_numpy() % groups).astype(np.int64)


def _key_text(values: np.ndarray) -> np.ndarray:
    """Key values as text, a whole number written alike whether read as an integer or a
    double (a file's integer column is doubles when a value is missing): values the
    matcher finds equal get the same text."""
    if values.dtype.kind == "f":
        whole = np.isfinite(values) & (values == np.round(values))
        text = values.astype(str).astype(object)
        text[whole] = values[whole].astype(np.int64).astype(str)
        return text
    if values.dtype.kind != "O":
        return values.astype(str).astype(object)
    return np.array([str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
                     for v in values], dtype=object)


class StreamStep:
    """The function given to `applyInPandasWithState` (picklable: the job data only). Each
    group is one key group: grouping value `values[i]` matches the events whose key hashes
    to `i`, every group reading every arrival (docs/matching.md, "Live streams on Spark")."""

    def __init__(self, data: dict[str, Any], trigger: float, values: list[int] | None = None):
        self.data = data
        self.trigger = trigger
        self.values = values or [0]

    def __call__(self, key: tuple, frames: Iterator[pd.DataFrame], state) -> Iterator[
            pd.DataFrame]:
        rows = pd.concat(list(frames), ignore_index=True)
        data, reader = self.data, self.data["reader"]
        collector = _Collector(output_folders(data["patterns"]))
        job = job_from_json(data)
        delay = float(data.get("options", {}).get("max_delay", 0.0))
        matcher = StreamMatcher(job, delay, collector,
                                positional_ids=not reader["source"].get("id_column"))
        skips = StreamSkips(data, job, collector) if data.get("after_match") else None
        matcher.writer = skips or collector  # a pattern with a skip: held, then released
        if len(self.values) > 1:
            group, attributes = self.values.index(int(key[0])), key_attributes(job)
            matcher.owned = lambda part: key_group(part, attributes, len(self.values)) == group
        figures = {"micro_batches": 0, "state_rows_max": 0, "header": None}
        plans: list[dict[str, Any] | None] = [None]  # per plan the matcher holds, its job
        # data (None: job.json's), the oldest first
        if state.exists:
            saved = decode(bytes(state.get[0]))
            restore(matcher, saved)
            figures, plans = saved["figures"], saved.get("plans", plans)
            if skips is not None:
                skips.restore(saved["after_match"])
            if len(plans) > 1:
                matcher.resume_phases([job_from_json(p or data) for p in plans],
                                      saved["phases"])
        # every group observes every arrival: the first alone measures and reports drift
        first = len(self.values) == 1 or self.values.index(int(key[0])) == 0
        invariants = (plans[-1] or data).get("adaptive", {}).get("invariants")
        drift = _drift_check(data["adaptive"], invariants) if data.get("adaptive") and \
            first and invariants else None
        if drift is not None:
            matcher.observers.append(drift.observe)
            figures.setdefault("drifts", [])
            if state.exists and state.get[1]:
                drift.from_bytes(bytes(state.get[1]))
        switched = self._switch(matcher, rows[rows["plan"]], plans, figures)
        if switched and drift is not None:  # the new plan's ranges, watched from here
            drift = _rewatched(drift, matcher, plans[-1].get("adaptive", {}).get("invariants"))
        rows = rows[~rows["plan"]]
        files = rows[~rows["end"] & (rows["source"] != "")].sort_values("source", kind="stable")
        for name, text, arrived in zip(files["source"], files["value"], files["arrived"],
                                       strict=True):
            self._add(matcher, collector, name, text.encode(), float(arrived))
        lines = rows[~rows["end"] & (rows["source"] == "")].sort_values("line")
        if len(lines):
            text, figures["header"] = self._lines(list(lines["value"]), figures["header"])
            self._add(matcher, collector, "socket", text, float(lines["arrived"].max()))
        final = bool(rows["end"].any())
        state_rows = matcher.advance(final=final)
        if skips is not None:
            skips.release(math.inf if final else decided_below(matcher))
        figures["micro_batches"] += 1
        figures["state_rows_max"] = max(figures["state_rows_max"], state_rows)
        progress = _progress(matcher, figures, state_rows, collector.seconds)
        if switched:
            progress["switch"] = switched
        if drift is not None:
            progress.update(_checked(drift, matcher, figures))
        plans = plans[-len(matcher.phases):]  # the plans that finished are forgotten
        state.update((encode(matcher, {"figures": figures, "plans": plans,
                                       "phases": matcher.phase_bounds(),
                                       **({"after_match": skips.state()} if skips else {})}),
                      *((b"" if drift is None else drift.to_bytes(),)
                        if data.get("adaptive") else ())))
        collector.add(PROGRESS, [json.dumps(progress)])
        if final:
            metrics = self._metrics(matcher, figures)
            if skips is not None:
                metrics["after_match_skipped"] = skips.dropped
            collector.add(FIGURES, [json.dumps(metrics)])
        yield pd.DataFrame({"output": collector.outputs, "value": collector.values})

    def _switch(self, matcher: StreamMatcher, arrived: pd.DataFrame,
                plans: list[dict[str, Any] | None], figures: dict[str, Any]
                ) -> dict[str, Any] | None:
        """Switch the matcher, at the watermark reached, to each plan that `arrived` (rows
        of the checkpoint's plans folder, by name) and can take over (else a warning and a
        record of `figures["plans_refused"]`); the last switch's record (None: none)."""
        switched = None
        for name, text in zip(arrived["source"], arrived["value"], strict=True):
            name = os.path.basename(name)
            try:
                job, new = plan_to_switch(text, name, self.data)
            except PlanRefused as err:
                _warn(err.message)
                figures.setdefault("plans_refused", []).append(err.message)
                continue
            matcher.switch(job)
            plans.append(new)
            switched = {"micro_batch": figures["micro_batches"] + 1,
                        "watermark": _finite(matcher.evaluated), "plan_file": name}
            figures.setdefault("switches", []).append(switched)
        return switched

    def _add(self, matcher: StreamMatcher, collector: _Collector, name: str, text: bytes,
             arrived: float) -> None:
        """One arrival read by the in-process reader (spooled to a file of its own); an
        unreadable one is counted, and the stream goes on."""
        suffix = "." + self.data["reader"]["source"]["format"]
        with tempfile.TemporaryDirectory(prefix="cepplan-stream-") as spool:
            path = os.path.join(spool, os.path.basename(name) + suffix)
            with open(path, "wb") as handle:
                handle.write(text)
            warn = lambda message: _warn(message.replace(path, name))  # noqa: E731
            late = matcher.add(read_counted(path, self.data["reader"], matcher, warn), arrived)
        if late is not None:
            types = {k: list(v) for k, v in self.data["types"].items()}
            collector.add(LATE, late_lines(late, types))

    def _lines(self, lines: list[str], header: str | None) -> tuple[bytes, str | None]:
        """A socket's lines as one file's text: the CSV header (the stream's first line,
        kept in the state) before them."""
        source = self.data["reader"]["source"]
        if source["format"] != "csv" or not source.get("header", True):
            return "".join(f"{line}\n" for line in lines).encode(), header
        if header is None:
            header, lines = lines[0], lines[1:]
        return "".join(f"{line}\n" for line in [header, *lines]).encode(), header

    def _metrics(self, matcher: StreamMatcher, figures: dict[str, Any]) -> dict[str, Any]:
        """metrics.json's figures (detection latency apart: the driver computes it from the
        latency rows committed)."""
        out = matcher.metrics(self.data)
        out["engine"] = "spark"
        out["stream"] = {"max_delay": matcher.delay, "trigger_seconds": self.trigger,
                         "micro_batches": figures["micro_batches"],
                         "watermark": _finite(matcher.watermark),
                         "late_events": dict(matcher.late),
                         "state_rows_max": figures["state_rows_max"]}
        for name in ("switches", "plans_refused"):  # the plans that arrived
            out["stream"][name] = figures.get(name, [])
        if "drifts" in figures:
            out["stream"].update({"adaptive": True, "horizon": self.data["adaptive"]["horizon"],
                                  "drifts": figures["drifts"], "replans": [],
                                  "statistics_seconds": round(figures["statistics_seconds"], 3)})
        return out


# metrics.json's figures that are counts over the matched events: summed over key groups
# (the others, counts of what was read, are every group's alike)
_PER_GROUP = ("rows_to_matchers", "rows_to_matchers_by_pattern", "matches",
              "kleene_cap_hits", "negation_held_back", "chunk_splits", "partial_matches",
              "seconds", "after_match_skipped")


def merged_figures(figures: list[dict[str, Any]]) -> dict[str, Any]:
    """The stream's figures from its key groups' (each group's last micro-batch's)."""
    last = max(f["stream"]["micro_batches"] for f in figures)
    figures = [f for f in figures if f["stream"]["micro_batches"] == last]
    figures.sort(key=lambda f: "drifts" not in f["stream"])  # the group reporting drift first
    merged = figures[0]
    for other in figures[1:]:
        for name in _PER_GROUP:
            if name in other:
                merged[name] = _added(merged.get(name), other[name])
        merged["stream"]["late_events"] = _added(merged["stream"]["late_events"],
                                                 other["stream"]["late_events"])
        merged["peak_memory_bytes"] = max(merged["peak_memory_bytes"],
                                          other["peak_memory_bytes"])
    return merged


def _added(one: Any, other: Any) -> Any:
    """Two groups' counts added: numbers, lists (element-wise) and dicts of them."""
    if one is None:
        return other
    if isinstance(one, dict):
        return {k: _added(one.get(k), other.get(k)) if k in other else one[k]
                for k in {**one, **other}}
    if isinstance(one, list):
        longer, shorter = (one, other) if len(one) >= len(other) else (other, one)
        return [a + (shorter[i] if i < len(shorter) else 0) for i, a in enumerate(longer)]
    return one + other


def _drift_check(section: dict[str, Any], invariants: dict[str, Any]):
    """The online statistics and drift rule of an adaptive job (its `adaptive` section: the
    workload's text, the horizon) watching `invariants` (the plan in force's)."""
    from cepplan.adaptive.drift_check import DriftCheck
    from cepplan.workload.loader import build_workload

    workload = build_workload(json.loads(section["workload"]), file=section["workload_file"],
                              file_digest=section["workload_sha256"])
    return DriftCheck(workload, invariants, section["horizon"])


def _rewatched(drift, matcher: StreamMatcher, invariants: dict[str, Any] | None):
    """After a switch, `drift` watching the new plan's `invariants` from the watermark
    reached, as a re-plan in-process does; None (no more checks) for a plan without."""
    from cepplan.adaptive.drift import DriftWatch

    if not invariants:
        _warn("the plan switched to records no invariants: the stream stops checking its "
              "statistics")
        matcher.observers.remove(drift.observe)
        return None
    drift.watch = DriftWatch(invariants, drift.rule, matcher.evaluated)
    return drift


def _checked(drift, matcher: StreamMatcher, figures: dict[str, Any]) -> dict[str, Any]:
    """When due, the statistics of the horizon below the watermark measured and checked:
    the progress row's `statistics` (the rates measured, the statistics drifted at this
    check) and, once a drift has lasted, its record in `figures["drifts"]` and, with the
    statistics document measured, the row's `drift`. The job has no planner: a drift is
    reported (`cepplan run` re-plans for it and publishes the plan to switch to:
    `stream_replan.py`), then not again within the cooldown, as a re-plan would be."""
    watermark = matcher.watermark
    if not drift.due(watermark, matcher.covered.first):
        figures["statistics_seconds"] = drift.seconds
        return {}
    found, document = drift.check(watermark)
    figures["statistics_seconds"] = drift.seconds
    if document is None:
        return {}
    row: dict[str, Any] = {"statistics": {
        "rates": {name: info["rate"] for name, info in document["types"].items()},
        "drifted": sorted(drift.watch.runs)}}
    if found:
        record = {"micro_batch": figures["micro_batches"], "watermark": watermark,
                  "since": drift.since(found), "reason": [v.describe() for v in found],
                  "violations": [{"statistic": v.statistic, "measured": v.measured,
                                  "low": v.low, "high": v.high} for v in found]}
        figures["drifts"].append(record)
        drift.watch.quiet_until = watermark + drift.rule.cooldown
        # the statistics to re-plan for (with the keys, as the in-process re-plan measures
        # them): in the sink once, not in the state carried from batch to batch
        row["drift"] = {**record, "statistics": drift.online.measure(watermark)}
    return row


def numbered(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A micro-batch's socket lines (one partition, in the order received) with their
    numbers in the `line` column."""
    count = 0
    for batch in batches:
        lines = pa.array(np.arange(count, count + batch.num_rows, dtype=np.int64))
        count += batch.num_rows
        yield pa.RecordBatch.from_arrays([*batch.columns, lines],
                                         names=[*batch.schema.names, "line"])


class _Collector(MatchArrivals):
    """The stream matcher's writer: each match as a line of the sink, in the output its
    pattern's `folders` entry names (default `matches`: a hidden pattern's timed-out partial
    matches go to `timed_out`), and per range the detection latency of its matches as
    another ([pattern, [seconds, ...]])."""

    def __init__(self, folders: dict[str, str]) -> None:
        super().__init__()
        self.folders = folders
        self.outputs: list[str] = []
        self.values: list[str] = []
        self.seconds: list[np.ndarray] = []  # the detection latencies, per range

    def add(self, output: str, values: list[str]) -> None:
        self.outputs += [output] * len(values)
        self.values += values

    def write(self, pattern: str, out: PartitionOutput,
              completed: np.ndarray | None = None) -> None:
        """Add one range's matches (`completed`: each one's last arrival, when they were
        held for an after-match skip, `StreamSkips`)."""
        if not out.count:
            return
        emitted = time.time()
        self.add(self.folders.get(pattern, MATCHES), out.texts())
        seconds = np.round(emitted - (self.completed(out) if completed is None else completed),
                           6)
        self.seconds.append(seconds)
        self.add(LATENCY, [json.dumps([pattern, seconds.tolist()])])


def _progress(matcher: StreamMatcher, figures: dict[str, Any], state_rows: int,
              seconds: list[np.ndarray]) -> dict[str, Any]:
    """The stream so far, after a micro-batch: rows read, watermark, matches, late events,
    the events kept; and the micro-batch's detection latencies (their count, and at most
    LATENCY_SAMPLE of them at evenly spaced ranks)."""
    spent = np.sort(np.concatenate(seconds)) if seconds else np.empty(0)
    ranks = np.unique(np.linspace(0, len(spent) - 1, LATENCY_SAMPLE).round().astype(int)) \
        if len(spent) else np.empty(0, dtype=int)
    return {"micro_batch": figures["micro_batches"],
            "rows_read": matcher.counts.get(ROWS_READ, 0),
            "watermark": _finite(matcher.watermark),
            "matches": sum(t.matches for t in matcher.totals.values()),
            "late_events": sum(matcher.late.values()), "state_rows": state_rows,
            "latency_matches": len(spent), "latency": spent[ranks].tolist()}


def progress_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A micro-batch's progress over the key groups (their `progress` rows): rows read,
    watermark, matches, late events, events kept, detection latency p50/p99 (None: no
    match) from the groups' samples, each weighted by the matches it stands for."""
    values, weights = [], []
    for row in rows:
        if row["latency"]:
            values += row["latency"]
            weights += [row["latency_matches"] / len(row["latency"])] * len(row["latency"])
    latency = None
    if values:
        order = np.argsort(values)
        ranked, cumulative = np.asarray(values)[order], np.cumsum(np.asarray(weights)[order])
        latency = [float(ranked[np.searchsorted(cumulative, q * cumulative[-1])])
                   for q in (0.5, 0.99)]
    marks = [r["watermark"] for r in rows if r["watermark"] is not None]
    return {"rows_read": max(r["rows_read"] for r in rows),
            "watermark": max(marks) if marks else None,
            "matches": sum(r["matches"] for r in rows),
            "late_events": sum(r["late_events"] for r in rows),
            "state_rows": sum(r["state_rows"] for r in rows), "latency": latency}


def _warn(text: str) -> None:
    """A file the stream could not read (counted too): on the job's output."""
    print(f"warning: {text}", file=sys.stderr, flush=True)


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None
