"""The output path made cheaper (docs/matching.md, "Output cost"): the renderer's gather of
string views equals Arrow's `take`; every example's match file is the format doc's text
(each line `json.dumps` of its match object) with the same matches under several plans;
the writer's page-cache recycling leaves the file's bytes intact; `import cepplan` keeps
Arrow's freed memory unless the user chose otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import writer as local_writer
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.engine_adapter.runtime.records import _gathered
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload
from tests.engine.example_data import EXAMPLES, stepwise_plan

ROWS = 1500  # of each example's events file
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=60)
@given(st.lists(TEXT, min_size=1, max_size=50), st.data())
def test_gathered_equals_take(values, data):
    """Short strings (inline in their views), long ones, empty and non-ASCII ones, from a
    sliced array: the same strings, in the same order, as `pc.take`."""
    array = pa.array(["pad", *values, "pad"], pa.large_string()).slice(1, len(values))
    indices = np.asarray(data.draw(st.lists(st.integers(0, len(values) - 1), max_size=200)),
                         dtype=np.int64)
    got = _gathered(array, indices)
    assert got.type == pa.large_string()
    assert got.to_pylist() == [values[i] for i in indices]
    assert got.equals(pc.take(array, indices))


def test_gathered_over_many_data_buffers():
    """Values whose views point into several data buffers (an array built in pieces)."""
    parts = [pa.array([f"{k}-{'x' * (k % 50)}" for k in range(j, j + 3000)], pa.string_view())
             for j in range(0, 9000, 3000)]
    array = pa.concat_arrays(parts).cast(pa.large_string())
    indices = np.random.default_rng(1).integers(0, len(array), 20000)
    assert _gathered(array, indices).equals(pc.take(array, indices))


def _plans(workload):
    base = trivial_plan(workload)
    yield "trivial", base
    yield "steps", stepwise_plan(workload)
    if len(workload.patterns) > 1:
        yield "sh", evaluation(workload, workload.statistics, base,
                               EvaluationSettings("sh", "edge", 1.0))


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir()
                                           if (p / "workload.json").exists()))
def test_example_lines_are_the_format_text(tmp_path, example):
    """Each line of every plan's match file is `json.dumps` of its match object (number
    text and spacing as the format doc writes them), and every plan writes the same
    matches (a plan orders a match's variables as it binds them)."""
    workload = load_workload(EXAMPLES / example / "workload.json")
    source = next(p for p in sorted((EXAMPLES / example).glob("events.*"))
                  if not p.name.endswith(".truth.json"))
    events = [str(tmp_path / source.name)]  # its first rows: seconds, not a minute
    with source.open("rb") as read:
        Path(events[0]).write_bytes(b"".join(islice(read, ROWS)))
    found = {}
    for name, plan in _plans(workload):
        out = tmp_path / name
        run_local_job(job_data(workload, plan), events, out, say=lambda _: None)
        lines = [line for part in sorted((out / "matches").glob("part-*"))
                 for line in part.read_bytes().decode().splitlines(keepends=True)]
        objects = [json.loads(line) for line in lines]
        assert [json.dumps(o) + "\n" for o in objects] == lines, name
        found[name] = Counter(json.dumps(o, sort_keys=True) for o in objects)
    assert sum(found["trivial"].values()) > 0
    assert all(lines == found["trivial"] for lines in found.values())


def test_recycling_keeps_the_bytes(tmp_path, monkeypatch):
    """Buffers of every size, with the page cache dropped behind the writer every few KiB:
    the file holds exactly the buffers, in order, and the recycling ran."""
    monkeypatch.setattr(local_writer.BackgroundFile, "RECYCLE_BYTES", 4096)
    calls = []
    advise = os.posix_fadvise
    monkeypatch.setattr(local_writer.os, "posix_fadvise",
                        lambda fd, start, size, how: calls.append(size) or advise(fd, start,
                                                                                  size, how))
    rng = np.random.default_rng(5)
    chunks = [rng.integers(0, 256, int(n), dtype=np.uint8).tobytes()
              for n in rng.integers(0, 20000, 40)]
    file = local_writer.BackgroundFile(tmp_path / "part.jsonl")
    for start in range(0, len(chunks), 3):
        file.write([pa.py_buffer(c) for c in chunks[start:start + 3]])
    file.close()
    assert (tmp_path / "part.jsonl").read_bytes() == b"".join(chunks)
    assert len(calls) >= 10 and calls == sorted(calls)


@pytest.mark.parametrize("preset", [None, "25"])
def test_import_keeps_freed_arrow_memory(preset):
    """`import cepplan` sets mimalloc's purge delay before pyarrow loads, keeping a value
    the user set."""
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    if preset is not None:
        env["MIMALLOC_PURGE_DELAY"] = preset
    code = "import os, sys, cepplan; print(os.environ['MIMALLOC_PURGE_DELAY'], " \
           "'pyarrow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == [preset or "-1", "False"]
