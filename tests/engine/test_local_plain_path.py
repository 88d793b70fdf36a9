"""The in-process engine's plain path: a time-ordered run imports no pandas (and pyarrow still
recognises pandas objects once pandas is imported later), and an error of the writer thread
reaches the run, leaving the output as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cepplan.engine_adapter.local import writer as local_writer
from cepplan.engine_adapter.local.writer import staged_output

ROOT = Path(__file__).resolve().parents[2]
RUN = """
import json, sys
from pathlib import Path
from benchmarks.stock_bars import workload
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.job_spec import job_data
from cepplan.planner.plan import trivial_plan
from cepplan.workload import build_workload

out = Path(sys.argv[1])
rows = [f"GOOG,20200101{m // 60:02d}{m % 60:02d},1,{(m * 7) % 13},1,1,5\\n" for m in range(600)]
(out / "bars.txt").write_text("".join(rows))
before = "pandas" in sys.modules
loaded = build_workload(workload(["goog"]))
metrics = run_local_job(job_data(loaded, trivial_plan(loaded)), [str(out / "bars.txt")],
                        out / "run", say=lambda _: None)
without = not before and "pandas" not in sys.modules
import pandas as pd
import pyarrow as pa
kind = str(pa.array(pd.Series(pd.Categorical(["a", "b", "a"]))).type)
print(json.dumps({"without_pandas": without, "categorical": kind,
                  "matches": metrics["matches"]["goog"]}))
"""


def test_time_ordered_run_imports_no_pandas(tmp_path):
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["without_pandas"]
    assert found["categorical"].startswith("dictionary<values=string")
    lines = (tmp_path / "run" / "matches" / "part-00000.jsonl").read_text().splitlines()
    assert found["matches"] == len(lines) > 0


class _FullDisk:
    def write(self, _data):
        raise OSError(28, "No space left on device")

    def close(self):
        pass


def test_writer_thread_error_reaches_the_run(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept").write_text("previous run")
    opened = local_writer._BackgroundFile.__init__

    def failing(self, path):
        opened(self, path)
        self._file.close()
        self._file = _FullDisk()

    monkeypatch.setattr(local_writer._BackgroundFile, "__init__", failing)
    with (pytest.raises(OSError, match="No space left"),
          staged_output(out, "jsonl") as (writer, finish)):
        for _ in range(20):
            writer.write("p", '{"a": 1}\n', 1)
        finish({"matches": {"p": 20}})
    assert [p.name for p in out.iterdir()] == ["kept"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging directory left
