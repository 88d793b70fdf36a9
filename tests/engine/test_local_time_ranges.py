"""The in-process engine matching time-ordered input range by range as it reads (memory
bounded by a range and a margin): with ranges of a few dozen rows it gives the reference's
matches and the whole-pool run's metrics, and input out of time order falls back to the
whole pool with the same results."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import byte_ranges, engine
from cepplan.engine_adapter.local import slices as local_slices
from cepplan.engine_adapter.local.source import read_batches
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from cepplan.workload import load_workload
from tests.engine.example_data import (
    EXAMPLES,
    STOCKS_REFERENCE,
    example_reference,
    stepwise_plan,
    thin_example,
)
from tests.engine.test_local_engine import SAME, read_matches

pytestmark = STOCKS_REFERENCE
ranges: list[int] = []  # time ranges matched, per run


def _run(data: dict, events: list[str], out: Path, monkeypatch, *, by_range: bool,
         said: list[str] | None = None, batch_bytes: int = 1024) -> dict:
    """One run with tiny ranges and slices (many of them; counted in `ranges`), or over the
    whole pool."""
    match_range = engine.match_range
    ranges.append(0)

    def counted(*args, **kwargs):
        ranges[-1] += 1
        return match_range(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(engine, "match_range", counted)  # a whole file, or time ranges
        patch.setattr(byte_ranges, "match_range", counted)  # one CSV file by byte range
        patch.setattr(engine, "read_batches", partial(read_batches, batch_bytes=batch_bytes))
        patch.setattr(byte_ranges, "CHUNK_BYTES", batch_bytes)
        patch.setattr(engine, "REGION_ROWS", 40)
        patch.setattr(local_slices, "SLICE_ROWS", 16)
        if not by_range:
            patch.setattr(engine, "streamable", lambda _job: False)
        return engine.run_local_job(data, events, out, say=(
            (lambda _text: None) if said is None else said.append))


def test_ranges_give_the_reference_matches(tmp_path, monkeypatch):
    """Stocks (negation, Kleene, AND, a key): trivial and many-step plans."""
    workload, events, expected = example_reference(  # a few margins (up to 5 windows of 30)
        "stocks", seed=5, duration=360, total_rate=1.0)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    assert sum(map(len, expected.values())) > 0
    for kind, plan in (("trivial", trivial_plan(workload)), ("steps", stepwise_plan(workload))):
        data = job_data(workload, plan)
        said: list[str] = []
        ranged = _run(data, [str(path)], tmp_path / kind, monkeypatch, by_range=True,
                      said=said)
        assert any("matched by time range" in line for line in said), kind
        assert ranges[-1] > 2, kind
        got = read_matches(tmp_path / kind)
        assert {k: got.get(k, []) for k in expected} == expected, kind
        whole = _run(data, [str(path)], tmp_path / f"{kind}-whole", monkeypatch,
                     by_range=False)
        assert {k: ranged[k] for k in SAME} == {k: whole[k] for k in SAME}, kind
        # each partial match counted once, by the range owning its latest event
        assert ranged["partial_matches"] == whole["partial_matches"], kind
        assert any(sum(p["by_prefix"]) for p in ranged["partial_matches"].values()), kind


def test_out_of_order_input_falls_back_to_the_whole_pool(tmp_path, monkeypatch):
    """The bundled fraud events with some late rows: same matches and counts as the whole
    pool, after saying why."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    lines = (EXAMPLES / "fraud" / "events.csv").read_text().splitlines(True)
    ordered, shuffled = tmp_path / "ordered.csv", tmp_path / "late.csv"
    ordered.write_text("".join(lines))
    body = lines[1:]
    shuffled.write_text(lines[0] + "".join(body[:5000] + body[5200:] + body[5000:5200]))
    data = job_data(workload, trivial_plan(workload))
    for name, path in (("ordered", ordered), ("late", shuffled)):
        said: list[str] = []
        ranged = _run(data, [str(path)], tmp_path / name, monkeypatch, by_range=True,
                      said=said, batch_bytes=1 << 16)  # late rows seen after some ranges
        whole = _run(data, [str(path)], tmp_path / f"{name}-whole", monkeypatch,
                     by_range=False, batch_bytes=1 << 16)
        assert {k: ranged[k] for k in SAME} == {k: whole[k] for k in SAME}, name
        assert read_matches(tmp_path / name) == read_matches(tmp_path / f"{name}-whole")
        assert ranges[-2] > 2, name  # ranges matched (before falling back, if late)
        fell_back = any("not in time order" in line for line in said)
        assert fell_back == (name == "late"), said
    assert sum(ranged["matches"].values()) > 0


@pytest.mark.parametrize("example", ["network"])
def test_hierarchies_use_the_whole_pool(tmp_path, monkeypatch, example):
    """A pattern reading another's matches is not matched by range (it needs them all)."""
    workload, events = thin_example(example)
    path = tmp_path / f"events.{workload.source.format}"
    write_events(events, workload, path)
    said: list[str] = []
    _run(job_data(workload, trivial_plan(workload)), [str(path)], tmp_path / "out",
         monkeypatch, by_range=True, said=said)
    assert not any("matched by time range" in line for line in said)
