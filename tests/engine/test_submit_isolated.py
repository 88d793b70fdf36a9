"""End to end: the generated job runs under plain spark-submit in a Python environment where
cepplan cannot be imported, and a workload whose name, strings and predicates hold Python code
runs none of it (the job carries them as data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from cepplan.engine_adapter.spark.generate import generate
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_matcher_vs_reference import frame

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

PACKAGES = ("pyspark", "py4j", "numpy", "numpy.libs", "pandas", "pyarrow", "dateutil", "pytz",
            "tzdata", "six.py")


def bare_python(root: Path) -> Path:
    """A virtual environment holding only pyspark, numpy, pandas, pyarrow (and what they
    import), linked from wherever this interpreter finds them: no cepplan."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    sites = [Path(p) for p in sys.path if p.endswith("site-packages")]
    target = next((root / "lib").glob("python3*/site-packages"))
    for name in PACKAGES:
        found = next((site / name for site in sites if (site / name).exists()), None)
        if found is not None:
            (target / name).symlink_to(found)
    return root / "bin" / "python"


def hostile_workload(marker: Path):
    code = f'__import__("os").system("touch {marker}")'
    return build_workload({
        "format": "cepplan.workload/1",
        "name": f"x\"); {code} #",
        "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "kind",
                   "time_column": "ts", "id_column": "id"},
        "event_types": {"A": {"attributes": {"v": "long", "k": "string"}},
                        "B": {"attributes": {"v": "long", "k": "string"}}},
        "patterns": [{"name": "exec", "structure": ["SEQ", "a:A", "b:B"],
                      "where": [f"a.k != '{code}'", "a.v < b.v"], "within": 3,
                      "emit": {"k": "a.k"}},
                     {"name": "eval", "structure": ["SEQ", "e:exec", "c:A"],
                      "where": [f"c.k != '\"); {code}; (\"'"], "within": 3}],
    })


def test_job_runs_without_cepplan_and_runs_no_workload_text(tmp_path):
    python = bare_python(tmp_path / "env")
    hidden = subprocess.run([str(python), "-c", "import cepplan"], cwd=tmp_path,
                            capture_output=True, env={"PATH": os.environ["PATH"]})
    assert hidden.returncode != 0, "cepplan must not be importable in the bare environment"
    marker = tmp_path / "MARKER"
    workload = hostile_workload(marker)
    rows = [("A", t % 7, t % 5, 0.5, "x") for t in range(0, 20, 2)] + \
           [("B", t % 7, t % 4, 0.5, "x") for t in range(1, 20, 3)]
    events = frame(rows)
    source = tmp_path / "events.csv"
    write_events(events, workload, source)
    job = generate(workload, trivial_plan(workload), tmp_path / "job")
    assert "system" not in (job / "job.py").read_text()
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = {"PATH": os.environ["PATH"], "JAVA_HOME": os.environ.get("JAVA_HOME", ""),
           "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python),
           "HOME": str(tmp_path), "SPARK_SUBMIT_OPTS": os.environ.get("SPARK_SUBMIT_OPTS", "")}
    run = subprocess.run([str(spark_submit), "--master", "local[2]", "--conf",
                          "spark.ui.enabled=false", "--py-files", str(job / "runtime.zip"),
                          str(job / "job.py"), "--events", str(source), "--out",
                          str(tmp_path / "out")], cwd=tmp_path, capture_output=True,
                         text=True, env={k: v for k, v in env.items() if v}, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not marker.exists()
    got = {}
    lines = [line for part in sorted((tmp_path / "out" / "matches").glob("part-*"))
             for line in part.read_text().splitlines()]
    for line in lines:
        obj = json.loads(line)
        got.setdefault(obj["pattern"], []).append(canonical(obj))
    expected = reference_matches(workload, events)
    assert sum(map(len, expected.values())) > 0
    for name, found in expected.items():
        assert sorted(got.get(name, [])) == sorted(map(canonical, found)), name
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["rows_read"] == len(events)
