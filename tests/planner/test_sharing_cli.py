"""`cepplan optimize --search ...` end to end: trees, orders consistent with them, the
sharing section, bad options (exit 2) and identical matches with and without the pass."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cepplan.costmodels.trees import tree_leaves
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import read_plan, trivial_plan
from cepplan.workload.loader import load_workload
from tests.conftest import EXAMPLES
from tests.in_process import cepplan

TRADING = EXAMPLES / "trading_rules"
# the search stops after 0.15 s of 3,000 neighbours without improvement, and gets what the
# acquisition leaves, which takes seconds on a busy machine: room for all
LIMIT = 30


@pytest.fixture(scope="module")
def sharing_plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("sharing") / "plan.json"
    done = cepplan("optimize", str(TRADING / "workload.json"), "-o", str(out), "--time-limit",
                    str(LIMIT), "--seed", "1")
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_plan_has_trees_orders_and_a_sharing_section(sharing_plan):
    out, stdout = sharing_plan
    raw = json.loads(out.read_text())
    workload = load_workload(TRADING / "workload.json")
    for name, body in raw["patterns"].items():
        pattern = workload.pattern(name)
        negated = [o.var for o in pattern.negated]
        leaves = list(tree_leaves(_tuple(body["tree"])))
        assert sorted(leaves) == sorted(o.var for o in pattern.positive)
        assert body["order"][len(leaves):] == negated
    sharing = raw["sharing"]
    cost = sharing["modelled_cost"]
    assert cost["chosen"] <= cost["re"] * (1 + 1e-9) and cost["chosen"] < cost["trivial"]
    assert sharing["shared"] and sharing["search"]["algorithm"] == "tabu"
    assert sharing["search"]["seconds"] <= LIMIT * 1.1
    for node in sharing["shared"]:
        assert len(node["users"]) >= 2
        for user, subtree in node["users"].items():
            assert _contains(_tuple(raw["patterns"][user]["tree"]), _tuple(subtree))
    assert "computed once for" in stdout
    read_plan(out, workload)  # still a valid plan for the workload


def test_chosen_orders_give_the_same_matches_as_the_pattern_order(sharing_plan):
    out, _ = sharing_plan
    workload = load_workload(TRADING / "workload.json")
    csv = pd.read_csv(TRADING / "events.csv")
    csv = csv[csv["ts"] < 120].reset_index(drop=True)
    events = pd.DataFrame({"__type": csv["symbol"], "__ts": csv["ts"], "__id": csv.index,
                           "price": csv["price"], "diff": csv["diff"]})
    chosen = run_local(events, job_from_json(job_data(workload, read_plan(out, workload))))
    plain = run_local(events, job_from_json(job_data(workload, trivial_plan(workload))))
    assert sum(map(len, plain.matches.values())) > 20
    for name, matches in plain.matches.items():
        assert sorted(map(_key, chosen.matches[name])) == sorted(map(_key, matches)), name


@pytest.mark.parametrize("args,where", [
    (["--search", "greedy"], "--search"), (["--neighborhood", "ring"], "--neighborhood"),
    (["--neighborhood", "vertex:1"], "--neighborhood"), (["--time-limit", "0"], "--time-limit"),
    (["--sharing", "suffix"], "--sharing")])
def test_bad_search_options_are_clear_errors(tmp_path, args, where):
    done = cepplan("optimize", str(EXAMPLES / "stocks" / "workload.json"), "-o",
                    str(tmp_path / "p.json"), *args)
    assert done.returncode == 2
    assert where in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "p.json").exists()


def test_nothing_to_share_is_said_and_none_skips_the_pass(tmp_path):
    out = tmp_path / "p.json"
    done = cepplan("optimize", str(EXAMPLES / "stocks" / "workload.json"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "nothing to share" in json.loads(out.read_text())["sharing"]["note"]
    assert "nothing to share" in done.stdout
    done = cepplan("optimize", str(EXAMPLES / "stocks" / "workload.json"), "-o", str(out),
                    "--search", "none")
    raw = json.loads(out.read_text())
    assert "sharing" not in raw and all("tree" not in p for p in raw["patterns"].values())


def test_prefix_sharing_plans_left_deep_orders_that_share_beginnings(tmp_path):
    out = tmp_path / "p.json"
    done = cepplan("optimize", str(TRADING / "workload.json"), "-o", str(out), "--time-limit",
                    str(LIMIT), "--sharing", "prefix")
    assert done.returncode == 0, done.stderr
    raw = json.loads(out.read_text())
    assert raw["sharing"]["search"]["sharing"] == "prefix"
    assert raw["sharing"]["shared"], "the trading rules have common beginnings to share"
    for body in raw["patterns"].values():
        assert _left_deep(_tuple(body["tree"]))
    for node in raw["sharing"]["shared"]:  # a shared node is where each user's tree starts
        for user, subtree in node["users"].items():
            leaves = tree_leaves(_tuple(raw["patterns"][user]["tree"]))
            assert sorted(tree_leaves(_tuple(subtree))) == sorted(leaves[:node["size"]])


def _left_deep(tree) -> bool:
    return not isinstance(tree, tuple) or (not isinstance(tree[1], tuple)
                                           and _left_deep(tree[0]))


def _tuple(tree):
    return (_tuple(tree[0]), _tuple(tree[1])) if isinstance(tree, list) else tree


def _contains(tree, sub) -> bool:
    if tree == sub or (isinstance(tree, tuple) and tree[::-1] == sub):
        return True
    return isinstance(tree, tuple) and (_contains(tree[0], sub) or _contains(tree[1], sub))


def _key(match) -> str:
    return json.dumps(match, sort_keys=True, default=str)
