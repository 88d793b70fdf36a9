"""The generated job on a real Spark standalone cluster: a master and two workers on loopback,
started with the daemon script the pyspark package ships, the job submitted with
`--master spark://127.0.0.1:PORT` over several input files; its matches equal the in-process
engine's. The cluster is stopped whatever happens, and no process of it is left."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

from cepplan.engine_adapter.spark.jvm_start import FAST_JIT
from cepplan.engine_adapter.spark.submit import JOB_SETTINGS, submit
from tests.conftest import EXAMPLES
from tests.engine.test_local_engine import SAME, read_matches
from tests.in_process import cepplan

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

SPARK_HOME = Path(pyspark.__file__).parent
DAEMON = SPARK_HOME / "sbin" / "spark-daemon.sh"  # what start-master.sh / start-worker.sh run
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
START_SECONDS = 180  # a loaded 2-core machine starts three JVMs slowly


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Cluster:
    """A running standalone cluster: its master URL and the marker in its processes' env."""

    url: str
    marker: str
    logs: Path


def daemon(env: dict[str, str], action: str, kind: str, instance: int, *args: str) -> None:
    subprocess.run(["bash", str(DAEMON), action, kind, str(instance), *args], env=env,
                   check=True, capture_output=True, timeout=120)


def processes_of(marker: str) -> list[int]:
    """The live processes whose environment carries `marker` (master, workers, executors)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def wait_for(logs: Path, text: str, count: int) -> bool:
    """Whether `count` of the cluster's logs say `text` within START_SECONDS."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        said = [log for log in logs.glob("*.out") if text in log.read_text(errors="replace")]
        if len(said) >= count:
            return True
        time.sleep(0.5)
    return False


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A master and two workers (one core, 1 GiB each) on 127.0.0.1, on free ports."""
    if not DAEMON.is_file():
        pytest.skip(f"pyspark ships no {DAEMON.name} to start a standalone cluster with")
    root = tmp_path_factory.mktemp("cluster")
    marker = f"CEPPLAN_TEST_CLUSTER={root}"
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=str(root / "logs"), SPARK_PID_DIR=str(root / "pids"),
               SPARK_WORKER_DIR=str(root / "work"), SPARK_LOCAL_DIRS=str(root / "local"),
               SPARK_IDENT_STRING="cepplan-test", PYSPARK_PYTHON=sys.executable,
               SPARK_DAEMON_JAVA_OPTS=FAST_JIT,  # master and workers: a test's short work
               CEPPLAN_TEST_CLUSTER=str(root))
    env.pop("PYTHONPATH", None)  # the executors import cepplan from the job's runtime.zip
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    try:
        daemon(env, "start", MASTER, 1, "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(free_port()))
        if not wait_for(root / "logs", "I have been elected leader", 1):
            pytest.skip("the standalone master did not start here: "
                        + _log_tail(root / "logs"))
        for instance in (1, 2):
            daemon(env, "start", WORKER, instance, "--host", "127.0.0.1", "--port",
                   str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                   "--memory", "1g", url)
        if not wait_for(root / "logs", "Successfully registered with master", 2):
            pytest.skip("the standalone workers did not register here: "
                        + _log_tail(root / "logs"))
        yield Cluster(url, marker, root / "logs")
    finally:
        for instance in (1, 2):
            _stop(env, WORKER, instance)
        _stop(env, MASTER, 1)
        _end(processes_of(marker))
    assert processes_of(marker) == []


def _stop(env: dict[str, str], kind: str, instance: int) -> None:
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        daemon(env, "stop", kind, instance)  # what is left is ended by its id below


def _end(pids: list[int]) -> None:
    """Whatever of the cluster outlived its stop script (by process id), then waited for."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists()
                and "Z" not in Path(f"/proc/{p}/stat").read_text(errors="replace").split()[2]]
        time.sleep(0.2)


def _log_tail(logs: Path) -> str:
    lines = [line for log in sorted(logs.glob("*.out"))
             for line in log.read_text(errors="replace").splitlines()]
    return " | ".join(lines[-5:])


def split_csv(source: Path, folder: Path, parts: int) -> list[str]:
    """`source`'s rows in `parts` files, each with the header line."""
    header, *rows = source.read_text().splitlines(keepends=True)
    size = -(-len(rows) // parts)
    paths = []
    for i in range(parts):
        path = folder / f"events-{i}.csv"
        path.write_text(header + "".join(rows[i * size:(i + 1) * size]))
        paths.append(str(path))
    return paths


def test_generated_job_on_a_standalone_cluster_equals_the_in_process_engine(cluster,
                                                                              tmp_path):
    files = split_csv(EXAMPLES / "fraud" / "events.csv", tmp_path, 3)
    plan = tmp_path / "plan.json"
    for args in (["optimize", EXAMPLES / "fraud" / "workload.json", "-o", plan, "-q"],
                 ["generate", plan, "-o", tmp_path / "job"],
                 ["run", plan, *files, "-o", tmp_path / "local", "--engine", "local", "-q"]):
        done = cepplan(*args)
        assert done.returncode == 0, done.stderr
    executor_options = f"{JOB_SETTINGS['spark.executor.defaultJavaOptions']} {FAST_JIT}"
    submit(tmp_path / "job", files, tmp_path / "cluster", master=cluster.url, quiet=True,
           conf={"spark.driver.memory": "1g", "spark.executor.memory": "512m",
                 "spark.cores.max": "2", "spark.executor.extraJavaOptions": executor_options})
    local = json.loads((tmp_path / "local" / "metrics.json").read_text())
    remote = json.loads((tmp_path / "cluster" / "metrics.json").read_text())
    assert {k: local[k] for k in SAME} == {k: remote[k] for k in SAME}
    assert sum(local["matches"].values()) > 0
    assert read_matches(tmp_path / "local") == read_matches(tmp_path / "cluster")
    applications = list((cluster.logs.parent / "work").glob("app-*/*/stderr"))
    assert len({p.parent.parent for p in applications}) == 1  # it ran on the cluster's
    assert len(applications) == 2, applications  # executors, one per worker
