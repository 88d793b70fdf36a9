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
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.engine_adapter.runtime.shared_plan import evaluate_group
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
    assert set(shared.partials) == {u.node for uses in plan.uses.values() for u in uses}


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


def _two_node_workload(seed: int) -> tuple[dict, dict]:
    """A pattern made of two shared parts (seed 004 §5: several disjoint shared subtrees),
    each shared with another pattern, in a random arrangement: SEQ or AND, the parts' events
    interleaved or not, a type in both parts, a condition across them, a NOT or KLEENE
    on top; the windows differ. Returns the workload and the plan's `sharing` section."""
    rng = random.Random(seed)
    op = rng.choice(("SEQ", "AND"))
    first, second = ("A", "B"), rng.choice((("C", "D"), ("C", "A")))
    slots = rng.choice(([0, 1, 2, 3], [0, 2, 1, 3], [2, 3, 0, 1], [0, 3, 1, 2]))
    names = ["a", "b", "c", "d"]
    types = [*first, *second]
    structure: list = [""] * 4
    for var, kind, slot in zip(names, types, slots, strict=True):
        structure[slot] = f"{var}:{kind}"
    extra = rng.choice((None, ["NOT", "n:E"], ["KLEENE", "k:F"]))
    if extra:
        structure.insert(rng.randint(0, 4), extra)
    where = ["a.diff < b.diff", "c.diff <= d.diff"]
    where += rng.sample(["b.diff < c.diff", "a.price > d.price"], rng.randint(0, 2))
    windows = [rng.choice((2, 3, 4)) for _ in range(3)]
    if extra and extra[0] == "KLEENE":
        windows[0] = 2  # the reference enumerates every subset of the window's F events
    left = ["x:A", "y:B", "z:E"] if rng.random() < 0.5 else ["z:E", "x:A", "y:B"]
    right = ["u:" + second[0], "w:" + second[1], "t:F"]
    patterns = [
        {"name": "both", "structure": [op, *structure], "where": where,
         "within": f"{windows[0]}s"},
        {"name": "left", "structure": [op, *left], "where": ["x.diff < y.diff"],
         "within": f"{windows[1]}s"},
        {"name": "right", "structure": [op, *right], "where": ["u.diff <= w.diff"],
         "within": f"{windows[2]}s"},
    ]
    if extra and extra[0] == "NOT":
        where.append("n.diff > 4")
    raw = {"format": "cepplan.workload/1", "name": "two_nodes", "time_unit": "s",
           "source": {"format": "csv", "header": True, "type_column": "type",
                      "time_column": "ts"},
           "schemas": {"Tick": {"price": "double", "diff": "double"}},
           "event_types": {t: {"schema": "Tick"} for t in "ABCDEF"}, "patterns": patterns}
    sharing = {"shared": [
        {"size": 2, "window": float(max(windows[:2])),
         "users": {"both": ["a", "b"], "left": ["x", "y"]}},
        {"size": 2, "window": float(max(windows[0], windows[2])),
         "users": {"both": ["c", "d"], "right": ["w", "u"]}}]}
    return raw, sharing


@pytest.mark.parametrize("seeds", [range(0, 6), range(6, 12)])
def test_a_pattern_fed_from_two_shared_nodes_matches_the_reference(seeds):
    with_matches = 0
    for seed in seeds:
        raw, sharing = _two_node_workload(seed)
        wl = build_workload(raw)
        data = job_data(wl, trivial_plan(wl))
        data["sharing"] = sharing
        job = job_from_json(data)
        plan = sharing_plan(job)
        assert [u.node for u in plan.uses["both"]] == [0, 1]
        assert plan.groups() == [["both", "left", "right"]]
        events = _events(list("ABCDEF"), 150, seed, 20.0)
        shared = run_local(events, job, share=True)
        assert _canonical(shared) == _canonical(run_local(events, job, share=False))
        expected = reference_matches(wl, events)
        assert {p: sorted(map(canonical, m)) for p, m in shared.matches.items()} == \
            {p: sorted(map(canonical, m)) for p, m in expected.items()}
        assert set(shared.partials) == {0, 1}
        with_matches += len(shared.matches["both"]) > 0
    assert with_matches >= len(seeds) - 1
