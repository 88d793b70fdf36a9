"""Streaming on Spark: `cepplan run --follow DIR --engine spark --master local[2]` (the
generated Structured Streaming job), fed by `cepplan replay --to DIR` once the query has
run a first micro-batch on a file of one blank line (its commit is in the checkpoint),
so no match waits on the JVM's or the Python workers' start:

a. sustained rate: the GOOG and MSFT patterns of the engine benchmark over synthetic minute
   bars replayed as fast as written, 1 s triggers: rows / seconds from the replay's start to
   the commit of the stream's last micro-batch (its checkpoint's commit log); the matches
   are the batch run's (as read through the sink's log);
b. detection latency at half that rate, 1 s triggers: p50/p99/max per pattern from
   metrics.json, p99 against 3 trigger intervals (target);
c. kill -9 at 5 random moments: the fraud stream of tests/engine/test_spark_stream.py (the
   suite kills it twice) killed 5 times while its directory grows, each time continued from
   the checkpoint: the committed matches equal the batch run's, none missing, none twice;
d. key groups: the fraud patterns without their conditions (dense: every pattern keyed by
   user) over 8 time-shifted copies of the fraud events (16 users), replayed as fast as
   written, 1 s triggers, local[2], in one key group (spark.default.parallelism 1, through a
   SPARK_CONF_DIR) and in two: seconds from the replay's start to the last commit, each
   against the batch run's matches.

Run with `python -m benchmarks streaming` (beside bench_streaming.py) or alone with
`python -m benchmarks streaming_spark`; `--quick` streams 20,000 rows, else 200,000.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.bench_streaming import (
    CLI,
    ROOT,
    bench_env,
    planned_bars,
    read_metrics,
    sorted_matches,
)
from tests.engine.test_spark_stream import killed_and_restarted_stream

START_SECONDS = 600  # the most the query may take to start before the benchmark gives up


def spark_stream(plan: Path, workload: Path, bars: Path, out: Path, *replay: str,
                 env: dict[str, str] | None = None) -> tuple[float, dict]:
    """(seconds from the replay's start to the last micro-batch's commit, metrics.json) of a
    stream on Spark (`env` for its command) fed by `replay --to DIR`, started once the query
    has run a first micro-batch."""
    source, checkpoint = out.parent / f"{out.name}-in", out.parent / f"{out.name}-ckpt"
    source.mkdir()
    follow = subprocess.Popen([*CLI, "run", str(plan), "--follow", str(source), "-o", str(out),
                               "--engine", "spark", "--master", "local[2]", "--checkpoint",
                               str(checkpoint), "--trigger", "1", "-q"], env=env or bench_env(),
                              cwd=ROOT)
    (source / ".0-warm-up.txt").write_text("\n")
    (source / ".0-warm-up.txt").rename(source / "0-warm-up.txt")
    deadline = time.monotonic() + START_SECONDS
    while not (checkpoint / "spark" / "commits" / "0").exists():
        if follow.poll() is not None or time.monotonic() > deadline:
            follow.kill()
            raise RuntimeError("the Spark stream did not start")
        time.sleep(0.2)
    start = time.time()
    subprocess.run([*CLI, "replay", str(bars), "-w", str(workload), "--to", str(source), "-q",
                    *replay], check=True, env=bench_env(), cwd=ROOT)
    if follow.wait():
        raise RuntimeError("the Spark stream failed")
    last = max(c.stat().st_mtime for c in (checkpoint / "spark" / "commits").iterdir())
    return last - start, read_metrics(out)


def committed_matches(out: Path) -> list[str]:
    """The match lines of the files the sink committed (its log), sorted."""
    paths = {json.loads(line)["path"].removeprefix("file://")
             for log in (out / "_spark_metadata").iterdir() if log.name[:1] != "."
             for line in log.read_text().splitlines()[1:]}
    return sorted(line for path in paths if "/output=matches/" in path
                  for line in Path(path).read_text().splitlines())


def dense_fraud(scratch: Path, copies: int) -> tuple[Path, Path, Path]:
    """The fraud patterns without conditions, their plan and `copies` copies of the fraud
    events one after the other in time, each copy's users renamed (4 names over them)."""
    raw = json.loads((ROOT / "examples" / "fraud" / "workload.json").read_text())
    for pattern in raw["patterns"]:
        pattern.pop("where", None)
    raw.get("statistics", {}).pop("selectivities", None)
    raw["source"].pop("path", None)
    workload, plan, events = (scratch / "dense.json", scratch / "dense-plan.json",
                              scratch / "dense.csv")
    workload.write_text(json.dumps(raw))
    subprocess.run([*CLI, "optimize", str(workload), "-o", str(plan), "-q"], check=True,
                   env=bench_env(), cwd=ROOT)
    header, *rows = (ROOT / "examples" / "fraud" / "events.csv").read_text().splitlines()
    span = max(float(row.split(",")[1]) for row in rows) + 10
    shifted = [header]
    for copy in range(copies):
        for row in rows:
            fields = row.split(",")
            fields[1], fields[2] = repr(float(fields[1]) + copy * span), f"{fields[2]}u{copy % 4}"
            shifted.append(",".join(fields))
    events.write_text("\n".join(shifted) + "\n")
    return workload, plan, events


def main(quick: bool = False) -> None:
    rows = 20_000 if quick else 200_000
    print(f"load average at start: {os.getloadavg()[0]:.1f} (a shared machine: wall figures "
          "move with it)")
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        workload, plan, bars = planned_bars(scratch, rows)
        subprocess.run([*CLI, "run", str(plan), str(bars), "-o", str(scratch / "batch"), "-q"],
                       check=True, env=bench_env(), cwd=ROOT)
        expected = sorted_matches(scratch / "batch")

        print(f"\na. sustained rate on Spark, GOOG + MSFT patterns, {rows:,} minute bars "
              "replayed as fast as written, 1 s triggers, local[2]")
        seconds, metrics = spark_stream(plan, workload, bars, scratch / "fast")
        rate = rows / seconds
        print(f"  {seconds:.2f} s, {rate:,.0f} rows/s, micro-batches "
              f"{metrics['stream']['micro_batches']}, same matches as the batch run: "
              f"{committed_matches(scratch / 'fast') == expected}")

        half = max(rate / 2, 100.0)
        print(f"\nb. detection latency on Spark at half that rate: {half:,.0f} rows/s")
        _, metrics = spark_stream(plan, workload, bars, scratch / "half", "--rate",
                                  f"{half:.0f}")
        for name, f in metrics["stream"]["detection_latency_seconds"].items():
            print(f"  {name:<6} matches {f['matches']:>8,}  p50 {f['p50']:.3f} s  "
                  f"p99 {f['p99']:.3f} s  max {f['max']:.3f} s  "
                  f"p99 = {f['p99']:.2f} trigger intervals (target <= 3)")
        print(f"  micro-batches {metrics['stream']['micro_batches']}; same matches as the "
              f"batch run: {committed_matches(scratch / 'half') == expected}")

        print("\nc. kill -9 at 5 random moments of the fraud stream, local[2], two key groups")
        clock = time.monotonic()
        (scratch / "killed").mkdir()
        try:
            killed_and_restarted_stream(scratch / "killed", 5, seed=5)
            verdict = "matches equal the batch run's (none missing, none twice)"
        except AssertionError as err:
            verdict = f"NOT equal to the batch run: {err}"
        print(f"  {verdict}; 6 starts in {time.monotonic() - clock:.0f} s")

        print("\nd. key groups on local[2]: the dense fraud stream in one group, then two")
        workload, plan, events = dense_fraud(scratch, 8)
        subprocess.run([*CLI, "run", str(plan), str(events), "-o", str(scratch / "dense"),
                        "-q"], check=True, env=bench_env(), cwd=ROOT)
        expected = sorted_matches(scratch / "dense")
        conf = scratch / "one-group-conf"
        conf.mkdir()
        (conf / "spark-defaults.conf").write_text("spark.default.parallelism 1\n")
        for name, env in (("one group", {**bench_env(), "SPARK_CONF_DIR": str(conf)}),
                          ("two groups", None)):
            out = scratch / name.replace(" ", "-")
            seconds, metrics = spark_stream(plan, workload, events, out, env=env)
            print(f"  {name:<10} {seconds:6.2f} s, {metrics['rows_read']:,} rows, "
                  f"{len(expected):,} matches, same as the batch run: "
                  f"{committed_matches(out) == expected}")
