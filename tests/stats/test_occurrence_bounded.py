"""The occurrence models and rates of the in-process engine, its per-step counts spilled to a
temporary file as they are read (time-ordered input) or brought back (input out of order):
the figures equal a reference computed here from the events with plain NumPy, whatever
the order of the rows; and the peak memory does not grow with the observed span."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import special

from cepplan.stats import step_tally
from cepplan.stats.collect import RATE_BLOCKS
from cepplan.stats.engines import measure
from cepplan.workload import build_workload
from tests.conftest import ROOT

MIB = 1 << 20
WORKLOAD = {
    "format": "cepplan.workload/1", "name": "span", "time_unit": "s",
    "source": {"format": "parquet", "type_column": "kind", "time_column": "t"},
    "schemas": {"E": {"x": "double"}},
    "event_types": {"A": {"schema": "E"}, "B": {"schema": "E"}},
    "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "where": ["a.x < b.x"],
                  "within": 5}],
}


def _events(seed: int, rows: int = 6000) -> pa.Table:
    """A bursty A (runs of events on neighbouring steps) and a sparse B, over 20,000 s."""
    rng = np.random.default_rng(seed)
    starts = rng.uniform(0, 20_000, rows // 6)
    bursty = (starts[:, None] + rng.exponential(3.0, (len(starts), 5))).ravel()
    sparse = rng.uniform(0, 20_000, rows - len(bursty))
    times = np.concatenate([bursty, sparse])
    kinds = np.array(["A"] * len(bursty) + ["B"] * len(sparse))
    return pa.table({"kind": kinds, "t": times, "x": rng.uniform(0, 100, rows)})


def _reference(table: pa.Table, step: float, order: int) -> dict:
    """Per type: events, steps, mean and variance per step, occupancy p, the largest count,
    the order-m transition counts and the rate interval's block counts, by plain NumPy over
    the whole span's dense per-step counts."""
    kinds = np.asarray(table["kind"])
    steps = np.floor(np.asarray(table["t"]) / step).astype(np.int64)
    first, last = int(steps.min()), int(steps.max())
    width = last - first + 1
    out = {}
    for name in ("A", "B"):
        counts = np.bincount(steps[kinds == name] - first, minlength=width)
        occupied = (counts > 0).astype(np.int64)
        windows = sum(occupied[order - k:width - k] << k for k in range(order + 1))
        block = (np.arange(width) * step) / (width * step / RATE_BLOCKS)
        blocks = np.bincount(np.clip(np.floor(block), 0, RATE_BLOCKS - 1).astype(np.int64),
                             weights=counts, minlength=RATE_BLOCKS)
        per_block = blocks / (width * step / RATE_BLOCKS)
        half = (float(special.stdtrit(RATE_BLOCKS - 1, 0.975)) * per_block.std(ddof=1)
                / np.sqrt(RATE_BLOCKS))
        rate = counts.sum() / (width * step)
        out[name] = {"events": int(counts.sum()), "steps": width,
                     "mean": counts.mean(), "variance": counts.var(ddof=1),
                     "p": occupied.mean(), "max_count": int(counts.max()),
                     "transitions": np.bincount(windows, minlength=2 ** (order + 1))
                     .reshape(2 ** order, 2).tolist(),
                     "ci": [max(0.0, rate - half), rate + half]}
    return out


@pytest.mark.parametrize("order_of_rows", ["sorted", "shuffled", "sorted in blocks"])
def test_figures_equal_the_reference_whatever_the_row_order(tmp_path, monkeypatch,
                                                            order_of_rows):
    """Row groups of 250 rows (one batch each) and a type's steps spilled beyond 64 in
    memory: sorted rows spill and never come back; shuffled rows bring the spilled steps
    back to merge; rows sorted within blocks of 1000 straddle the spilled ones now and then."""
    monkeypatch.setattr(step_tally, "SPILL_PAIRS", 64)
    table = _events(5)
    rng = np.random.default_rng(1)
    order = np.argsort(np.asarray(table["t"]), kind="stable")
    if order_of_rows == "shuffled":
        order = rng.permutation(len(order))
    elif order_of_rows == "sorted in blocks":
        order = np.concatenate([rng.permutation(order[i:i + 1000])
                                for i in range(0, len(order), 1000)])
    table = table.take(order)
    pq.write_table(table, tmp_path / "e.parquet", row_group_size=250)
    document = measure([str(tmp_path / "e.parquet")], build_workload(WORKLOAD),
                       engine="local", time_step=2.0, markov_order=2, sample=500)
    for name, expected in _reference(table, 2.0, 2).items():
        got = document["occurrence"][name]
        assert got["events"] == expected["events"] == document["types"][name]["count"]
        assert got["steps"] == expected["steps"]
        assert got["poisson"]["mean_per_step"] == pytest.approx(expected["mean"], rel=1e-12)
        assert got["poisson"]["variance_per_step"] == pytest.approx(expected["variance"],
                                                                    rel=1e-9)
        assert got["bernoulli"]["p"] == pytest.approx(expected["p"], rel=1e-12)
        assert got["bernoulli"]["max_count"] == expected["max_count"]
        assert got["markov"]["transition_counts"] == expected["transitions"]
        assert document["types"][name]["rate_ci95"] == pytest.approx(expected["ci"],
                                                                     rel=1e-9)


MEASURE = """
import json, sys
from cepplan.stats.engines import measure
from cepplan.workload import load_workload
document = measure([sys.argv[1]], load_workload(sys.argv[2]), engine="local", sample=2000)
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rss": int(peak.split()[1]) * 1024, "rows": document["rows"]["read"]}))
"""


def _peak(tmp_path: Path, rows: int) -> int:
    """The peak memory of measuring `rows` events, each on a step of its own (two types
    alternating, one per second): as many occupied steps as events."""
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps(WORKLOAD))
    events = tmp_path / f"events_{rows}.parquet"
    rng = np.random.default_rng(rows)
    pq.write_table(pa.table({"kind": np.where(np.arange(rows) % 2, "B", "A"),
                             "t": np.arange(rows, dtype=float),
                             "x": rng.uniform(0, 100, rows)}), events, row_group_size=100_000)
    done = subprocess.run([sys.executable, "-c", MEASURE, str(events), str(workload)],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["rows"] == rows
    return result["rss"]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peaks read from /proc")
def test_peak_memory_does_not_grow_with_the_span(tmp_path):
    """300,000 then 3,000,000 events, each on its own step (a span ten times longer): the
    per-step counts (8 bytes a step, about 20 at the peak of their summary: 60 MB more for
    the longer span) stay a few MB of memory, the rest in a temporary file."""
    small, large = _peak(tmp_path, 300_000), _peak(tmp_path, 3_000_000)
    assert large - small < 25 * MIB, (small, large)
