"""The in-process engine's plain path: a time-ordered run imports no pandas (and pyarrow still
recognises pandas objects once pandas is imported later), keys included; an error of the writer
thread reaches the run, leaving the output as it was; NumPy key groups equal pandas'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.local import writer as local_writer
from cepplan.engine_adapter.local.writer import staged_output
from cepplan.engine_adapter.runtime.job import PartitionOutput, partitions
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.workload.columns import EVENT_ID

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
    opened = local_writer.BackgroundFile.__init__

    def failing(self, path):
        opened(self, path)
        self._file.close()
        self._file = _FullDisk()

    monkeypatch.setattr(local_writer.BackgroundFile, "__init__", failing)
    with (pytest.raises(OSError, match="No space left"),
          staged_output(out, "jsonl") as (writer, finish)):
        for _ in range(20):
            writer.write("p", PartitionOutput('{"a": 1}\n', 1, None, 0))
        finish({"matches": {"p": 20}})
    assert [p.name for p in out.iterdir()] == ["kept"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging directory left


KEYED = """
import json, sys
from pathlib import Path
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.job_spec import job_data
from cepplan.planner.plan import trivial_plan
from cepplan.workload import build_workload

out = Path(sys.argv[1])
rows = ["kind,ts,user,x"] + [f"{'AB'[i % 2]},{i},u{i % 499},{i % 7}" for i in range(6000)]
(out / "events.csv").write_text("\\n".join(rows) + "\\n")
loaded = build_workload({
    "format": "cepplan.workload/1", "time_unit": "s",
    "source": {"format": "csv", "type_column": "kind", "time_column": "ts"},
    "event_types": {"A": {"attributes": {"user": "string", "x": "long"}},
                    "B": {"attributes": {"user": "string", "x": "long"}}},
    "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "within": 2000,
                  "partition_by": ["user"], "where": ["a.x < b.x"]}]})
metrics = run_local_job(job_data(loaded, trivial_plan(loaded)), [str(out / "events.csv")],
                        out / "run", say=lambda _: None)
print(json.dumps({"pandas": "pandas" in sys.modules, "matches": metrics["matches"]["p"]}))
"""


def test_a_keyed_run_splits_its_keys_without_pandas(tmp_path):
    """Each key became a pandas frame (the whole range converted, then grouped): 20,000 keys
    cost 5 to 17 times 4 keys on the same rows. Keys are split on the NumPy columns now."""
    done = subprocess.run([sys.executable, "-c", KEYED, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    expected = sum(1 for i in range(0, 6000, 2) for j in range(i + 1, min(6000, i + 2001), 2)
                   if i % 499 == j % 499 and i % 7 < j % 7)
    assert found == {"pandas": False, "matches": expected} and expected > 0


KEY_VALUES = st.lists(st.tuples(st.sampled_from(["k1", "k2", "é", None]),
                                st.sampled_from([1.0, 2.0, float("nan")])), max_size=40)


@settings(max_examples=200)
@given(KEY_VALUES, st.sampled_from([("s",), ("f",), ("s", "f"), ("f", "s")]))
def test_numpy_key_groups_equal_pandas_groups(rows, keys):
    """The groups of NumPy columns (Arrow's hash) are pandas' groupby(sort=False) groups:
    the same rows, in the same order, rows with a missing key value left out."""
    import pandas as pd

    frame = Columns({"s": np.array([r[0] for r in rows], dtype=object),
                     "f": np.array([r[1] for r in rows], dtype=np.float64),
                     EVENT_ID: np.arange(len(rows))})
    got = [list(group[EVENT_ID]) for group in partitions(frame, keys)]
    table = pd.DataFrame({n: frame[n] for n in frame.columns})
    expected = [list(group[EVENT_ID]) for _, group in
                table.dropna(subset=list(keys)).groupby(list(keys), sort=False)]
    assert got == expected
