"""`POST /v1/replan` on a real server on loopback (docs/service.md): the new plan for drifted
statistics with its changes and gain; a re-plan that cannot be made is a 422 saying the old
plan is kept."""

from __future__ import annotations

import json

import pytest

from tests.service.serving import TOKEN, post, workload

DRIFTED = {"format": "cepplan.stats/1", "rates": {"PasswordReset": 3.0, "Login": 0.05}}


@pytest.fixture(scope="module")
def fraud_plan(server) -> dict:
    port, _ = server
    status, _, body = post(port, "/v1/optimize", {"workload": workload(),
                                                  "settings": {"search": "none"}}, token=TOKEN)
    assert status == 200
    return json.loads(body)


def _replan(port: int, body: dict) -> tuple[int, dict]:
    status, headers, answer = post(port, "/v1/replan", body, token=TOKEN)
    media = "application/json" if status == 200 else "application/problem+json"
    assert headers["content-type"] == media
    return status, json.loads(answer)


def test_drifted_statistics_get_a_new_plan_its_changes_and_gain(server, fraud_plan):
    """The fraud wave (password resets 150x, logins rare): account_takeover's steps change,
    the old plan sends more events by the model, and both drifted rates are named outside
    the old plan's ranges in the user's words."""
    port, _ = server
    status, answer = _replan(port, {"workload": workload(), "plan": fraud_plan,
                                    "statistics": DRIFTED})
    assert status == 200
    assert answer["plan"]["format"] == "cepplan.plan/1" and "invariants" in answer["plan"]
    assert any(c.startswith("account_takeover: steps r -> w -> l became ")
               for c in answer["changes"])
    assert answer["gain"] > 1 and answer["old_cost"] > answer["new_cost"]
    described = [v["description"] for v in answer["violations"]]
    assert described[0].startswith("PasswordReset: 3 events per minute, the plan holds for ")
    assert described[1].startswith("Login: 0.05 events per minute, the plan holds for ")


def test_the_statistics_planned_with_give_no_change(server, fraud_plan):
    port, _ = server
    rates = workload()["statistics"]["rates"]
    status, answer = _replan(port, {"workload": workload(), "plan": fraud_plan,
                                    "statistics": {"format": "cepplan.stats/1",
                                                   "rates": rates}})
    assert status == 200
    assert answer["changes"] == [] and answer["gain"] == 1.0 and answer["violations"] == []


def test_a_plan_without_invariants_is_refused_and_the_old_plan_kept(server, fraud_plan):
    port, _ = server
    older = {k: v for k, v in fraud_plan.items() if k != "invariants"}
    status, problem = _replan(port, {"workload": workload(), "plan": older,
                                     "statistics": DRIFTED})
    assert status == 422
    assert "the old plan is kept" in problem["detail"]
    assert problem["problems"][0]["file"] == "request.plan"


def test_statistics_under_which_no_plan_meets_a_latency_bound_are_refused(server):
    """Planned with only each child's cheapest plan offered (-k 1, min-cost), the hierarchy's
    top pattern meets its 1-step bound only while A is rarer than B."""
    from tests.planner.test_replan import HIERARCHY

    port, _ = server
    status, _, body = post(port, "/v1/optimize", {
        "workload": HIERARCHY, "settings": {"search": "none", "k": 1, "strategy": "min-cost"}},
        token=TOKEN)
    assert status == 200
    status, problem = _replan(port, {
        "workload": HIERARCHY, "plan": json.loads(body),
        "statistics": {"format": "cepplan.stats/1", "rates": {"A": 5.0, "B": 0.001}}})
    assert status == 422
    assert "latency bound" in problem["detail"] and "the old plan is kept" in problem["detail"]


@pytest.mark.parametrize(("body", "path", "words"), [
    ({"workload": {}}, "plan", "the plan.json document in use"),
    ({"plan": {}, "statistics": {}}, "workload", "a workload.json document"),
    ({"workload": {}, "plan": {}, "statistics": [], "settings": {"k": 3}}, "statistics",
     "a stats.json document"),
    ({"workload": {}, "plan": {}, "statistics": {}, "settings": {"k": 3}}, "settings.k",
     "unknown setting; expected seed, time_limit"),
    ({"workload": {}, "plan": {}, "statistics": {}, "stats": {}}, "stats", "unknown member"),
])
def test_a_malformed_request_names_each_problem(server, body, path, words):
    port, _ = server
    status, problem = _replan(port, body)
    assert status == 422
    assert any(p["path"] == path and words in p["message"] for p in problem["problems"])
