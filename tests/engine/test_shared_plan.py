"""The engine running the shared plan: matches identical with and without sharing and equal
to the brute-force reference, on random many-pattern workloads and the trading-rules example;
shared nodes really computed once (partial matches counted per node)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.engine_adapter.runtime.shared_plan import evaluate_group, sharing_plan
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.search.synthetic import synthetic_workload
from cepplan.workload.loader import build_workload, load_workload
from tests.engine.reference_matcher import canonical, reference_matches

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trading_rules"


def _events(types: list[str], n: int, seed: int, duration: float) -> pd.DataFrame:
    rng = random.Random(seed)
    # continuous stamps: no two events closer than exactly a window (no float boundary)
    rows = sorted((rng.uniform(0, duration), rng.choice(types)) for _ in range(n))
    return pd.DataFrame({"__type": [t for _, t in rows], "__ts": [ts for ts, _ in rows],
                         "__id": range(n), "price": [rng.randint(0, 9) for _ in rows],
                         "diff": [float(rng.randint(0, 6)) for _ in rows]})


def _shared_job(wl):
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", 0.5, seed=1))
    return job_from_json(job_data(wl, plan))


def _canonical(result) -> dict[str, list[str]]:
    return {p: sorted(json.dumps(m, sort_keys=True) for m in ms)
            for p, ms in result.matches.items()}


@pytest.mark.parametrize("seed", range(6))
def test_random_workloads_match_the_reference_with_and_without_sharing(seed):
    raw = synthetic_workload(10, avg_size=3.0, n_types=5, seed=seed, window_s=3, max_size=4)
    wl = build_workload(raw)
    job = _shared_job(wl)
    events = _events([f"T{i:02d}" for i in range(5)], 70, seed, 25.0)
    shared = run_local(events, job, share=True)
    alone = run_local(events, job, share=False)
    assert _canonical(shared) == _canonical(alone)
    expected = reference_matches(wl, events)
    assert {p: sorted(map(canonical, m)) for p, m in shared.matches.items()} == \
        {p: sorted(map(canonical, m)) for p, m in expected.items()}
    plan = sharing_plan(job)
    assert set(shared.partials) == {u.node for u in plan.uses.values()}


def test_random_workloads_do_share():
    """The plans above are not trivially unshared: most seeds have users of shared nodes."""
    used = 0
    for seed in range(6):
        raw = synthetic_workload(10, avg_size=3.0, n_types=5, seed=seed, window_s=3, max_size=4)
        used += bool(sharing_plan(_shared_job(build_workload(raw))).uses)
    assert used >= 4


def test_trading_rules_identical_with_and_without_sharing():
    wl = load_workload(EXAMPLE / "workload.json")
    csv = pd.read_csv(EXAMPLE / "events.csv")
    csv = csv[csv["ts"] < 60].reset_index(drop=True)
    events = pd.DataFrame({"__type": csv["symbol"], "__ts": csv["ts"], "__id": csv.index,
                           "price": csv["price"], "diff": csv["diff"]})
    job = _shared_job(wl)
    plan = sharing_plan(job)
    assert len(plan.groups()) >= 5
    shared = run_local(events, job, share=True)
    assert _canonical(shared) == _canonical(run_local(events, job, share=False))
    assert sum(map(len, shared.matches.values())) > 1000
    assert sum(shared.partials.values()) > 0


def test_counting_without_rendering_gives_the_same_counts():
    """evaluate_group(render=False), which benchmarks use to time the joins alone."""
    raw = synthetic_workload(10, avg_size=3.0, n_types=5, seed=2, window_s=3, max_size=4)
    job = _shared_job(build_workload(raw))
    plan = sharing_plan(job)
    events = _events([f"T{i:02d}" for i in range(5)], 70, 2, 25.0)
    assert plan.groups()
    for names in plan.groups():
        full = evaluate_group(events, job, plan, names)
        bare = evaluate_group(events, job, plan, names, render=False)
        assert sum(o.count for o in full.outputs.values()) > 0
        assert {n: o.count for n, o in bare.outputs.items()} == \
            {n: o.count for n, o in full.outputs.items()}
        assert bare.partials == full.partials
        assert all(o.matches == "" for o in bare.outputs.values())
