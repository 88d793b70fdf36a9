"""The planning work of each endpoint, run in a worker process (CPU-bound work stays off the
event loop). Each function takes the checked request and returns (status, media type, body)."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import orjson

from cepplan.errors import CepplanError, InputError
from cepplan.planner.compose import Settings
from cepplan.planner.evaluation import EvaluationSettings
from cepplan.service.problems import MEDIA_TYPE, problem_body
from cepplan.workload.loader import build_workload
from cepplan.workload.model import Statistics, Workload

JSON = "application/json"
HTML = "text/html; charset=utf-8"
Answer = tuple[int, str, bytes]


def validate(request: dict[str, Any]) -> Answer:
    """`POST /v1/validate`: the workload's patterns and types, or every problem in it."""
    return _answering(lambda: _validate(request))


def optimize(request: dict[str, Any]) -> Answer:
    """`POST /v1/optimize`: the plan.json document of the workload."""
    return _answering(lambda: _optimize(request))


def compare(request: dict[str, Any], html: bool) -> Answer:
    """`POST /v1/compare`: the report.json document, or the report page."""
    return _answering(lambda: _compare(request, html))


def replan(request: dict[str, Any]) -> Answer:
    """`POST /v1/replan`: the new plan, what changed, the modelled costs and gain, and the
    old plan's violated ranges; a refused re-plan is a 422 saying the old plan is kept."""
    return _answering(lambda: _replan(request))


def _validate(request: dict[str, Any]) -> Answer:
    workload = _workload(request)
    body = {"valid": True, "name": workload.name, "digest": workload.digest,
            "patterns": [p.name for p in workload.patterns],
            "event_types": sorted(workload.event_types)}
    return 200, JSON, orjson.dumps(body)


def _optimize(request: dict[str, Any]) -> Answer:
    from cepplan.planner.optimize import optimize as plan_workload

    workload, statistics, settings, share = _planning_inputs(request)
    search = request["settings"].get("search", "tabu")
    evaluation = EvaluationSettings(search, request["settings"].get("neighborhood", "edge"),
                                    settings.time_limit, settings.seed,
                                    sharing=request["settings"].get("sharing", "subtree"))
    result = plan_workload(workload, statistics, settings, "request.stats"
                           if request["stats"] else None, share=share,
                           evaluation_settings=evaluation)
    return 200, JSON, orjson.dumps(result.plan.to_json())


def _compare(request: dict[str, Any], html: bool) -> Answer:
    from cepplan.report.compare import compare as compare_planners

    workload, statistics, settings, _ = _planning_inputs(request)
    report = compare_planners(workload, statistics, settings,
                              stats_file="request.stats" if request["stats"] else None).report
    if html:
        from cepplan.report.render_html import render_html

        return 200, HTML, render_html(report).encode()
    return 200, JSON, orjson.dumps(report)


def _replan(request: dict[str, Any]) -> Answer:
    from cepplan.planner.invariants import violations
    from cepplan.planner.replan import ReplanRefused
    from cepplan.planner.replan import replan as replan_plan
    from cepplan.stats.stats_file import parse_stats

    workload = _workload(request)
    # the measured entries alone: the rest are the old plan's (its invariants' basis)
    measured = parse_stats(request["statistics"], "request.statistics",
                           replace(workload, statistics=Statistics()))
    settings = request["settings"]
    try:
        done = replan_plan(workload, request["plan"], measured,
                           time_limit=settings.get("time_limit"), seed=settings.get("seed", 0),
                           plan_file="request.plan")
    except ReplanRefused as refused:
        return 422, MEDIA_TYPE, problem_body(422, refused.message, refused.problems)
    outside = violations(request["plan"]["invariants"], measured)
    body = {"plan": done.plan.to_json(), "changes": done.changes, "old_cost": done.old_cost,
            "new_cost": done.new_cost, "gain": done.gain,
            "violations": [{**asdict(v), "description": v.describe()} for v in outside]}
    return 200, JSON, orjson.dumps(body)


def _planning_inputs(request: dict[str, Any]) -> tuple[Workload, Any, Settings, bool]:
    from cepplan.stats.stats_file import parse_stats

    workload = _workload(request)
    stats = request["stats"]
    statistics = (parse_stats(stats, "request.stats", workload) if stats
                  else workload.statistics)
    options = {k: v for k, v in request["settings"].items()
               if k not in ("search", "neighborhood", "sharing")}
    share = options.pop("share", True)
    if "k" in options:
        options["k"] = options["k"] or None
    return workload, statistics, Settings(**options), share


def _workload(request: dict[str, Any]) -> Workload:
    return build_workload(request["workload"], file="request.workload")


def _answering(work) -> Answer:
    """Run the work; bad input becomes a 422 problem with every (file, path, message)."""
    try:
        return work()
    except InputError as err:
        return 422, MEDIA_TYPE, problem_body(422, "the workload or statistics have problems",
                                             err.problems)
    except CepplanError as err:
        return 422, MEDIA_TYPE, problem_body(422, str(err))
