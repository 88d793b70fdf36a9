"""A shared plan on the local engine's time slices (docs/sharing.md, "What the
engines do with it"): a group's table cut into many slices, each member rendered once
per `SLICE_ROWS` of its own events over several slices (its ranks moved to the group's
table) or per slice (Kleene members), writes byte for byte the lines of the same plan
matched in one slice, the unshared run's matches and the brute-force reference's; and a
member is rendered no more often than when evaluated alone."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cepplan.engine_adapter.local import engine
from cepplan.engine_adapter.local import shared as local_shared
from cepplan.engine_adapter.local import slices as local_slices
from cepplan.engine_adapter.runtime import records
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.workload.loader import load_workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_local_engine import read_matches
from tests.engine.test_shared_plan import EXAMPLE
from tests.engine.test_shared_time_ranges import (
    _chosen,
    random_events,
    random_workload,
    trading_events,
)


def _run(data: dict, events: Path, out: Path, monkeypatch, *, region: int, slice_rows: int
         ) -> tuple[dict[str, list[bytes]], Counter, list[int]]:
    """One run by time range: per pattern its lines (bytes, sorted), the render calls per
    pattern, and the rows of every group slice matched."""
    renders: Counter = Counter()
    sliced: list[int] = []
    match_array, group_slices = records.Renderer.match_array, local_shared._group_slices

    def counted_render(renderer, spec, matches):
        renders[spec.name] += 1
        return match_array(renderer, spec, matches)

    def counted_slices(table, shape, largest):
        for (first, last), own in group_slices(table, shape, largest):
            sliced.append(last - first)
            yield (first, last), own

    with monkeypatch.context() as patch:
        patch.setattr(engine, "REGION_ROWS", region)
        patch.setattr(local_slices, "SLICE_ROWS", slice_rows)
        patch.setattr(records.Renderer, "match_array", counted_render)
        patch.setattr(local_shared, "_group_slices", counted_slices)
        metrics = engine.run_local_job(data, [str(events)], out, say=lambda _: None)
    assert metrics["matches"]
    lines: dict[str, list[bytes]] = {}
    for part in sorted((out / "matches").iterdir()):
        if not part.name.startswith((".", "_")):
            for line in part.read_bytes().splitlines():
                lines.setdefault(line.split(b'"', 4)[3].decode(), []).append(line)
    return {p: sorted(v) for p, v in lines.items()}, renders, sliced


def _check(data: dict, events: Path, tmp: Path, monkeypatch) -> dict[str, list]:
    """Many small slices against one slice of the same plan (bytes), against the unshared
    run (matches) and its render calls; returns the matches."""
    many, renders, sliced = _run(data, events, tmp / "many", monkeypatch, region=400,
                                 slice_rows=24)
    one, _, whole = _run(data, events, tmp / "one", monkeypatch, region=10**9,
                         slice_rows=10**9)
    assert len(sliced) > 3 * len(whole) > 0  # many slices of each group, and one
    assert many == one
    unshared = {k: v for k, v in data.items() if k != "sharing"}
    _, alone, _ = _run(unshared, events, tmp / "alone", monkeypatch, region=400,
                       slice_rows=24)
    assert read_matches(tmp / "many") == read_matches(tmp / "alone")
    members = set(sharing_plan(job_from_json(data)).uses)
    assert members
    # rendered per SLICE_ROWS of its own events, as alone: not once per slice of the group
    assert sum(renders[n] for n in members) <= sum(alone[n] for n in members)
    return read_matches(tmp / "many")


@pytest.mark.parametrize("seed", [0, 3])
def test_random_workloads_in_many_slices(seed, tmp_path, monkeypatch):
    """Random many-pattern workloads (SEQ and AND, conditions, no key): every way above,
    and the brute-force reference's matches."""
    wl = random_workload(seed)
    data = _chosen(wl)
    path = tmp_path / "events.csv"
    events = random_events(seed, 700, 240.0, path)
    got = _check(data, path, tmp_path, monkeypatch)
    expected = {p: sorted(map(canonical, m)) for p, m in reference_matches(wl, events).items()}
    assert {p: got.get(p, []) for p in expected} == expected
    assert sum(map(len, expected.values())) > 100


def test_trading_rules_in_many_slices(tmp_path, monkeypatch):
    """The trading rules (a key per ticker, Kleene members rendered per slice)."""
    path = trading_events(60, tmp_path / "events.csv")
    data = _chosen(load_workload(EXAMPLE / "workload.json"))
    got = _check(data, path, tmp_path, monkeypatch)
    assert sum(map(len, got.values())) > 500
