"""The in-process statistics engine's memory does not grow with its input: ten times the
rows (and bytes, and Parquet row groups) cost no more peak memory, measured in a fresh process
(its peak resident memory and the peak of Arrow's allocations, neither of which depends on
the machine's speed). Wide rows make the files large while the rows stay few, so each run
takes about a second: in CSV a column no statistic reads (the reader still reads its bytes),
in Parquet a text attribute (read and checked: Parquet skips unread columns). And a batch
is made canonical at most `BATCH_ROWS` rows at a time, however narrow the rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from cepplan.sources import local_source
from cepplan.workload import build_workload
from cepplan.workload.source_spec import reader_arguments
from tests.conftest import ROOT

MIB = 1 << 20
ROWS = 16_000  # and ten times as many
PAD = 1000  # bytes of the column nobody reads, per row
WORKLOAD = {
    "format": "cepplan.workload/1", "name": "memory", "time_unit": "s",
    "schemas": {"E": {"x": "double"}},
    "event_types": {"A": {"schema": "E"}, "B": {"schema": "E"}},
    "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "where": ["a.x < b.x"],
                  "within": 5}],
}
MEASURE = """
import json, sys
import pyarrow as pa
import pyarrow.csv as pa_csv
from cepplan.stats.engines import measure
from cepplan.workload import load_workload
document = measure([sys.argv[1]], load_workload(sys.argv[2]), engine="local", sample=2000)
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rss": int(peak.split()[1]) * 1024,  # ru_maxrss counts the parent's
                  "arrow": pa.default_memory_pool().max_memory(),
                  "rows": document["rows"]["read"], "sampled": document["selectivity_details"]
                  ["p"]["a.x < b.x"]["n"]}))
"""


def _events(rows: int) -> pa.Table:
    """Two types alternating, ten events per second over a span growing with `rows`, each
    with a wide text value."""
    rng = np.random.default_rng(rows)
    return pa.table({"kind": np.where(np.arange(rows) % 2, "B", "A"),
                     "t": np.arange(rows) / 10.0, "x": rng.uniform(0, 100, rows),
                     "note": pa.array(["n" * PAD] * rows)})


def _csv(path, rows: int) -> None:
    pa_csv.write_csv(_events(rows), path)


def _parquet(path, rows: int) -> None:
    """Row groups of 2,500 rows, as a writer flushing often leaves them."""
    pq.write_table(_events(rows), path, row_group_size=2500, compression="none")


def _peaks(tmp_path, fmt: str, rows: int) -> dict:
    source = {"format": fmt, "type_column": "kind", "time_column": "t"}
    schema = {"x": "double", **({"note": "string"} if fmt == "parquet" else {})}
    workload = tmp_path / f"workload_{fmt}.json"
    workload.write_text(json.dumps({**WORKLOAD, "source": source, "schemas": {"E": schema}}))
    events = tmp_path / f"events_{rows}.{fmt}"
    (_csv if fmt == "csv" else _parquet)(events, rows)
    done = subprocess.run([sys.executable, "-c", MEASURE, str(events), str(workload)],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr
    peaks = json.loads(done.stdout)
    assert peaks["rows"] == rows and peaks["sampled"] > 100
    return peaks


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peaks read from /proc")
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_peak_memory_does_not_grow_with_the_input(tmp_path, fmt):
    """16,000 then 160,000 rows of 1 KB (16 MB then 160 MB; Parquet: 7 then 64 row groups):
    the peak of Arrow's allocations stays under what a batch needs, and so does the growth
    of the process's peak memory. Before, the Parquet reader kept every row group it had
    read (332 MB of Arrow memory for the larger file, the process's peak 630 MB above the
    smaller file's), and CSV was read in blocks of 16 MiB, a second copy of each held while
    it was parsed: the smaller file fit in one, the larger file's peak was 73 MB higher."""
    small, large = _peaks(tmp_path, fmt, ROWS), _peaks(tmp_path, fmt, 10 * ROWS)
    assert large["arrow"] < 64 * MIB, (small, large)
    assert large["rss"] - small["rss"] < 40 * MIB, (small, large)


def test_canonical_batches_hold_at_most_batch_rows(tmp_path, monkeypatch):
    """A block of narrow CSV rows (many more than `BATCH_ROWS` in its 16 MiB) is made
    canonical in slices of at most `BATCH_ROWS` rows, with the same rows, times, ids and
    reject reasons, in order, as one batch gives (malformed rows and bad times included)."""
    lines = [f"{'AB'[i % 2]},{'x' if i % 7 == 3 else i},{i % 5}" for i in range(40)]
    lines[11] = "A,11"  # too few fields: malformed, kept at its position
    path = tmp_path / "narrow.csv"
    path.write_text("kind,t,x\n" + "\n".join(lines) + "\n")
    arguments = reader_arguments(build_workload({**WORKLOAD, "source": {
        "format": "csv", "type_column": "kind", "time_column": "t"}}))

    def rows(batches) -> list[tuple]:
        return [(b.type_names[c] if c >= 0 else None, None if np.isnan(t) else t, i,
                 b.reasons[r] if r >= 0 else None)
                for b in batches for c, t, i, r in zip(b.type_codes, b.ts.tolist(),
                                                       b.ids.tolist(), b.reject, strict=True)]

    whole = list(local_source.read_canonical([str(path)], **arguments))
    monkeypatch.setattr(local_source, "BATCH_ROWS", 6)
    sliced = list(local_source.read_canonical([str(path)], **arguments))
    assert len(whole) == 1 and len(sliced) == 7
    assert max(len(b) for b in sliced) == 6
    assert rows(sliced) == rows(whole)
    assert sorted(r[2] for r in rows(sliced)) == list(range(40))  # malformed: at the end
