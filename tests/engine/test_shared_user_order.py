"""A shared node's user goes on from the node's partial matches in the order the job chose
for it (`runtime/user_order.py`): on a bushy plan tree ((v1, v0), (v2, v3)) with (v2, v3)
shared, the plan's order binds v1 first, linked by no condition to the node: every partial
match times every v1 in the window. The chosen order keeps the matches (equal to the pattern
evaluated alone and to the brute-force reference) and builds no more join rows shared than
unshared; the old order built more."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pandas as pd
import pytest

from benchmarks.profile.profile_shared_joins import JoinRows
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.engine_adapter.runtime.shared_nodes import sharing_plan
from cepplan.engine_adapter.runtime.shared_plan import evaluate_group
from cepplan.engine_adapter.runtime.user_order import UserJoin, join_models, user_join
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import read_plan, trivial_plan, write_plan
from cepplan.workload.loader import build_workload
from tests.engine.reference_matcher import canonical, reference_matches

DURATION, EVENTS, TYPES = 60.0, 600, "ABCD"


def _workload(op: str) -> dict:
    """`bushy` over A, B, C, D whose (C, D) part another pattern, `pair`, has too; its only
    condition linking the rest to that part is a selective one on v0."""
    patterns = [
        {"name": "bushy", "structure": [op, "v0:A", "v1:B", "v2:C", "v3:D"],
         "where": ["v0.diff < v1.diff", "v0.price == v2.price", "v2.diff < v3.diff"],
         "within": "3s"},
        {"name": "pair", "structure": [op, "x:C", "y:D"], "where": ["x.diff < y.diff"],
         "within": "2s"},
    ]
    return {"format": "cepplan.workload/1", "name": "bushy_user", "time_unit": "s",
            "source": {"format": "csv", "header": True, "type_column": "type",
                       "time_column": "ts"},
            "schemas": {"Tick": {"price": "double", "diff": "double"}},
            "event_types": {t: {"schema": "Tick"} for t in TYPES}, "patterns": patterns}


def _events(seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = sorted((rng.uniform(0, DURATION), rng.choice(TYPES)) for _ in range(EVENTS))
    return pd.DataFrame({"__type": [t for _, t in rows], "__ts": [ts for ts, _ in rows],
                         "__id": range(EVENTS), "price": [rng.randint(0, 9) for _ in rows],
                         "diff": [float(rng.randint(0, 6)) for _ in rows]})


def _job(op: str, *, model: bool = True):
    """The plan's tree ((v1, v0), (v2, v3)) for `bushy`, its order the tree's leaves, (v2, v3)
    shared with `pair`; with `model`, the figures the plan prices it with (rates of the
    generated stream, the conditions' selectivities over its value ranges)."""
    wl = build_workload(_workload(op))
    data = job_data(wl, trivial_plan(wl))
    tree = [["v1", "v0"], ["v2", "v3"]]
    for pattern in data["patterns"]:
        if pattern["name"] == "bushy":
            pattern["order"] = ["v1", "v0", "v2", "v3"]
    data["sharing"] = {"shared": [{"size": 2, "window": 3.0,
                                   "users": {"bushy": ["v2", "v3"], "pair": ["x", "y"]}}]}
    if model:
        rate = EVENTS / DURATION / len(TYPES)
        data["sharing"]["join_model"] = {"bushy": {
            "rates": dict.fromkeys(("v0", "v1", "v2", "v3"), rate),
            "conditions": [[["v0", "v1"], 21 / 49], [["v0", "v2"], 0.1], [["v2", "v3"], 21 / 49]],
            "tree": tree}}
    return wl, job_from_json(data)


def _rows(job, plan, events) -> int:
    """Join rows (every join step's, before its conditions) of the group over the events."""
    counter = JoinRows()
    try:
        names = plan.groups()[0] if plan.uses else [s.name for s in job.patterns]
        evaluate_group(events, job, plan, names, render=False)
        return counter.rows
    finally:
        counter.restore()


def _canonical(result) -> dict[str, list[str]]:
    return {p: sorted(json.dumps(m, sort_keys=True) for m in ms)
            for p, ms in result.matches.items()}


@pytest.mark.parametrize("op", ["SEQ", "AND"])
def test_the_chosen_order_binds_the_linked_variable_first(op):
    _, job = _job(op)
    plan = sharing_plan(job)
    assert plan.joins["bushy"].steps[0] == ("v0",)
    assert plan.joins["bushy"].shares
    _, bare = _job(op, model=False)  # without the plan's figures: linked first too
    assert sharing_plan(bare).joins["bushy"].steps == (("v0",), ("v1",))


@pytest.mark.parametrize("op,seed", [("SEQ", 0), ("SEQ", 1), ("AND", 2)])
def test_matches_stay_and_shared_builds_no_more_rows_than_unshared(op, seed):
    wl, job = _job(op)
    events = _events(seed)
    shared = run_local(events, job, share=True)
    assert sum(map(len, shared.matches.values())) > 0
    assert _canonical(shared) == _canonical(run_local(events, job, share=False))
    expected = reference_matches(wl, events)
    assert {p: sorted(map(canonical, m)) for p, m in shared.matches.items()} == \
        {p: sorted(map(canonical, m)) for p, m in expected.items()}
    plan = sharing_plan(job)
    unshared = _rows(job, replace(plan, uses={}, joins={}), events)
    assert _rows(job, plan, events) <= unshared
    # the plan's order from the node (v1 first, no condition to the node) built more
    old = UserJoin((("v1",), ("v0",)), 0.0, 0.0)
    assert _rows(job, replace(plan, joins={**plan.joins, "bushy": old}), events) > unshared


def test_a_user_cheaper_alone_does_not_share():
    """Where going on from the node builds more rows than the pattern's own order (the node
    frequent, the user's own first event rare and linked), the user evaluates alone."""
    _, job = _job("SEQ")
    spec, stages = job.pattern("bushy"), job.stages["bushy"]
    rates = {"v0": 0.01, "v1": 0.01, "v2": 50.0, "v3": 50.0}
    model = replace(join_models(job.data["sharing"])["bushy"], rates=rates)
    spec = replace(spec, order=("v0", "v1", "v2", "v3"))
    join = user_join(spec, stages, frozenset({"v2", "v3"}), (), model)
    assert not join.shares and join.cost > join.alone > 0


def test_the_planner_writes_each_users_figures(tmp_path):
    """`cepplan optimize`'s plan carries per user of a shared node its rates, conditions and
    tree (`sharing.join_model`), which the engine reads; the plan file passes its schema."""
    raw = _workload("SEQ")
    raw["patterns"].append({"name": "pair2", "structure": ["SEQ", "s:C", "t:D"],
                            "where": ["s.diff < t.diff"], "within": "2s"})
    raw["statistics"] = {"rates": dict.fromkeys(TYPES, 2.5)}
    wl = build_workload(raw)
    plan = evaluation(wl, wl.statistics, trivial_plan(wl),
                      EvaluationSettings("tabu", "edge", 0.5, seed=1))
    users = {n for s in plan.sharing["shared"] for n in s["users"]}
    assert users and set(plan.sharing["join_model"]) == users
    for name in users:
        entry = plan.sharing["join_model"][name]
        assert set(entry["rates"]) == {o.var for o in wl.pattern(name).positive}
        assert entry["tree"] == plan.patterns[name].tree
    write_plan(plan, tmp_path / "plan.json")
    read = read_plan(tmp_path / "plan.json", wl)
    assert read.sharing["join_model"] == json.loads(json.dumps(plan.sharing["join_model"]))
    job = job_from_json(job_data(wl, read))
    assert set(sharing_plan(job).joins) <= users
