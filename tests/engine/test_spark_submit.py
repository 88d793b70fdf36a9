"""`spark-submit` of generated jobs: many matches need no driver memory (nothing is gathered on
the driver), and a failing job tells the user why in one message."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cepplan.engine_adapter.spark.generate import generate
from cepplan.engine_adapter.spark.submit import JobFailed, failure_message, submit
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)


def pairs_workload(fmt: str):
    """SEQ(a:A, b:A) with a.v < b.v within 10 s: about 4.5 matches per event at 1 event/s."""
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": fmt, "header": True, "type_column": "kind", "time_column": "ts"},
        "event_types": {"A": {"attributes": {"v": "double", "k": "string"}}},
        "patterns": [{"name": "pairs", "structure": ["SEQ", "a:A", "b:A"],
                      "where": ["a.v < b.v"], "within": 10}]})


def events(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({"__type": "A", "__ts": np.arange(n, dtype=float),
                         "__id": np.arange(n), "v": rng.uniform(0, 1, n),
                         "k": [f"padding-{i:08d}-" * 4 for i in range(n)]})


def pairs_expected(stream: pd.DataFrame) -> int:
    """The pairs pattern's matches on `events`, counted directly: at one event a second,
    each event's later partners are the next ten with a greater v."""
    values = stream["v"].to_numpy()
    return sum(int(np.count_nonzero(values[i + 1:i + 11] > values[i]))
               for i in range(len(values)))


def written_matches(out) -> int:
    return sum(sum(1 for _ in part.open()) for part in (out / "matches").glob("part-*"))


def pairs_job(tmp_path, n: int):
    """(`n` events, the pairs pattern's generated job, their CSV file) under tmp_path."""
    workload = pairs_workload("csv")
    stream = events(n)
    source = tmp_path / "events.csv"
    write_events(stream, workload, source)
    return stream, generate(workload, trivial_plan(workload), tmp_path / "job"), source


def test_many_matches_with_a_tiny_driver(tmp_path):
    """About 90,000 matches (~33 MB of JSON lines) written with a 512 MiB driver that may
    receive at most 1 MiB of task results: only possible if the executors write them."""
    stream, job, source = pairs_job(tmp_path, 20_000)
    out = tmp_path / "out"
    submit(job, [str(source)], out, master="local[2]", quiet=True,
           conf={"spark.driver.memory": "512m", "spark.driver.maxResultSize": "1m",
                 "spark.ui.enabled": "false"})
    assert written_matches(out) == pairs_expected(stream) > 80_000
    assert sum(p.stat().st_size for p in (out / "matches").glob("part-*")) > 30 << 20


def test_the_range_local_plan_starts_no_spark_sql(tmp_path):
    """One CSV file in time order on a local master runs as plain RDD tasks: the job starts
    no SparkSession, whose start costs the driver's JVM about a second of CPU. The JVM's
    class-loading log shows it: none of Spark SQL's classes (1,468 with a session) loaded."""
    stream, job, source = pairs_job(tmp_path, 2_000)
    loaded = tmp_path / "classes.txt"
    submit(job, [str(source)], tmp_path / "out", master="local[2]", quiet=True,
           conf={"spark.driver.extraJavaOptions": f"-Xlog:class+load:file={loaded}"})
    classes = loaded.read_text()
    assert "org.apache.spark.SparkContext " in classes  # the log is complete
    assert "org.apache.spark.sql." not in classes
    assert written_matches(tmp_path / "out") == pairs_expected(stream)


def test_failure_cause_reaches_the_user(tmp_path):
    """A corrupt Parquet part among good ones fails inside Spark's tasks; the message names
    the cause (not just "spark-submit failed")."""
    workload = pairs_workload("parquet")
    folder = tmp_path / "events"
    folder.mkdir()
    write_events(events(100), workload, folder / "part-0.parquet")
    (folder / "part-1.parquet").write_bytes(b"PAR1 this is not parquet at all PAR1")
    job = generate(workload, trivial_plan(workload), tmp_path / "job")
    with pytest.raises(JobFailed) as failed:
        submit(job, [str(folder)], tmp_path / "out", master="local[2]", quiet=True,
               conf={"spark.ui.enabled": "false"})
    message = str(failed.value)
    assert message.startswith("the Spark job failed: ")
    assert "part-1.parquet" in message or "Parquet" in message, message
    assert len(message.splitlines()) <= 3, message
    assert not (tmp_path / "out").exists()


def test_the_driver_error_wins_over_a_task_failing_afterwards():
    """Spark's output as a busy machine prints it: the job ends on the corrupt file, and a
    task still running logs a secondary storage error after the driver's traceback. The
    message names the file, not the aftermath."""
    lines = [
        "26/11/27 07:10:01 ERROR Executor: Exception in task 1.0 in stage 2.0 (TID 3)",
        "org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while "
        "reading file file:///data/events/part-1.parquet.  SQLSTATE: KD001",
        "Traceback (most recent call last):",
        '  File "job.py", line 97, in run_job',
        "py4j.protocol.Py4JJavaError: An error occurred while calling o82.collectToPython.",
        ": org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while "
        "reading file file:///data/events/part-1.parquet.  SQLSTATE: KD001",
        "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(x.scala:920)",
        "26/11/27 07:10:02 WARN TaskSetManager: Lost task 0.0 in stage 2.0 (TID 2)",
        "org.apache.spark.SparkException: [INTERNAL_ERROR_STORAGE] Block broadcast_2 does not "
        "exist. SQLSTATE: XX000",
    ]
    message = failure_message(lines, 1)
    assert "part-1.parquet" in message and "broadcast" not in message, message
    assert message.startswith("the Spark job failed: SparkException: [FAILED_READ_FILE"), message


@pytest.mark.parametrize("where", ["SPARK_SUBMIT_OPTS", "spark-defaults.conf"])
def test_the_users_jvm_options_win(tmp_path, monkeypatch, capsys, where):
    """cepplan starts the driver JVM with the client compiler only (`TieredStopAtLevel=1`);
    a user's own value, from the environment or from spark-defaults.conf's
    spark.driver.extraJavaOptions, is the one the JVM runs with (it prints its final flags)."""
    mine = "-XX:+PrintCommandLineFlags -XX:TieredStopAtLevel=2"
    if where == "SPARK_SUBMIT_OPTS":
        monkeypatch.setenv("SPARK_SUBMIT_OPTS", mine)
    else:
        (tmp_path / "spark-defaults.conf").write_text(f"spark.driver.extraJavaOptions {mine}\n")
        monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    stream, job, source = pairs_job(tmp_path, 100)
    submit(job, [str(source)], tmp_path / "out", master="local[1]", verbose=True)
    flags = [line for line in capsys.readouterr().err.splitlines()
             if "-XX:TieredStopAtLevel" in line and "-XX:+PrintCommandLineFlags" in line]
    assert len(flags) == 1 and "-XX:TieredStopAtLevel=2" in flags[0].split()
    assert written_matches(tmp_path / "out") == pairs_expected(stream)
