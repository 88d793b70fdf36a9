"""The in-process engine running the shared plan range by range as it reads (no pandas
pool): with ranges of a few dozen rows, the same matches and metrics as the whole-pool
shared run and as the unshared run, each node's partial matches counted once, and the
brute-force reference's matches on random many-pattern workloads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.engine_adapter.runtime.shared_plan import evaluate_group
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.search.synthetic import synthetic_workload
from cepplan.workload.loader import build_workload, load_workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_local_engine import SAME, read_matches
from tests.engine.test_local_time_ranges import _run, ranges
from tests.engine.test_shared_plan import EXAMPLE, _events


def _chosen(wl) -> dict:
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", 0.5, seed=1))
    return job_data(wl, plan)


def random_workload(seed: int):
    """A random many-pattern workload: 10 SEQ/AND patterns of about 3 of 5 types, 3 s
    windows, conditions."""
    return build_workload(synthetic_workload(10, avg_size=3.0, n_types=5, seed=seed,
                                             window_s=3, max_size=4))


def random_events(seed: int, count: int, span: float, path: Path) -> pd.DataFrame:
    """`count` random events of `random_workload`'s 5 types over `span` seconds (canonical
    frame), also written to `path` as the workload's CSV."""
    events = _events([f"T{i:02d}" for i in range(5)], count, seed, span)
    events.rename(columns={"__type": "type", "__ts": "ts"}).drop(columns="__id").to_csv(
        path, index=False)
    return events


def trading_events(seconds: float, path: Path) -> Path:
    """The trading rules' events of their first `seconds`, written to `path` as CSV."""
    csv = pd.read_csv(EXAMPLE / "events.csv")
    csv[csv["ts"] < seconds].to_csv(path, index=False)
    return path


def _three_runs(data: dict, events: Path, tmp: Path, monkeypatch) -> dict[str, tuple]:
    """Shared by range, shared over the whole pool, unshared by range: metrics, matches."""
    out = {}
    unshared = {k: v for k, v in data.items() if k != "sharing"}
    for name, job, by_range in (("ranges", data, True), ("whole", data, False),
                                ("alone", unshared, True)):
        said: list[str] = []
        metrics = _run(job, [str(events)], tmp / name, monkeypatch, by_range=by_range,
                       said=said)
        assert by_range == any("matched by time range" in line for line in said), name
        out[name] = (metrics, read_matches(tmp / name), ranges[-1])
    return out


def _assert_same(runs: dict[str, tuple], data: dict) -> None:
    ranged, whole, alone = runs["ranges"], runs["whole"], runs["alone"]
    assert ranged[2] > 2  # many time ranges
    assert ranged[1] == whole[1] == alone[1]
    assert {k: ranged[0][k] for k in SAME} == {k: whole[0][k] for k in SAME} == \
        {k: alone[0][k] for k in SAME}
    # each node's partial matches counted once, by the range owning their latest event
    assert ranged[0]["shared_nodes"] == whole[0]["shared_nodes"]
    used = {u.node for uses in sharing_plan(job_from_json(data)).uses.values() for u in uses}
    assert len(ranged[0]["shared_nodes"]) == len(used) > 0
    assert sum(n["partial_matches"] for n in ranged[0]["shared_nodes"]) > 0


def test_trading_rules_by_range_equal_whole_pool_and_unshared(tmp_path, monkeypatch):
    path = trading_events(40, tmp_path / "events.csv")
    data = _chosen(load_workload(EXAMPLE / "workload.json"))
    runs = _three_runs(data, path, tmp_path, monkeypatch)
    _assert_same(runs, data)
    assert sum(runs["ranges"][0]["matches"].values()) > 500


@pytest.mark.parametrize("seed", [0, 3])
def test_random_workloads_by_range_match_the_reference(seed, tmp_path, monkeypatch):
    wl = random_workload(seed)
    data = _chosen(wl)
    if not sharing_plan(job_from_json(data)).uses:
        pytest.fail(f"seed {seed}: the plan shares nothing, pick another seed")
    path = tmp_path / "events.csv"
    events = random_events(seed, 240, 90.0, path)
    runs = _three_runs(data, path, tmp_path, monkeypatch)
    _assert_same(runs, data)
    expected = {p: sorted(map(canonical, m)) for p, m in reference_matches(wl, events).items()}
    assert {p: runs["ranges"][1].get(p, []) for p in expected} == expected
    assert sum(map(len, expected.values())) > 0


def test_small_chunks_with_acquired_flags_give_the_same_group_matches():
    """`match_group` in chunks of a few events of each member's own (scaled to the group
    table) and with acquired-row flags: the same matches and node partial matches as in
    one chunk without flags."""
    job = job_from_json(_chosen(random_workload(2)))
    plan = sharing_plan(job)
    events = _events([f"T{i:02d}" for i in range(5)], 150, 2, 50.0)
    assert plan.groups()
    found = 0
    for names in plan.groups():
        whole = evaluate_group(events, job, plan, names, chunk_events=10_000)
        flagged = events.assign(**{f"kept {n}": True for n in names})
        small = evaluate_group(flagged, job, plan, names, chunk_events=3,
                               acquired={n: f"kept {n}" for n in names})
        assert {n: sorted(o.texts()) for n, o in small.outputs.items()} == \
            {n: sorted(o.texts()) for n, o in whole.outputs.items()}
        assert small.partials == whole.partials
        found += sum(o.count for o in whole.outputs.values())
    assert found > 0
