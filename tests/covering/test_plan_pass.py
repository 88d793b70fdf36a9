"""The covering pass: expected QoR against Monte Carlo, the plan section, and bad input."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from cepplan.cli.app import app
from cepplan.costmodels.interests import processing_neighbours
from cepplan.costmodels.qor import precision, recall
from cepplan.errors import InputError
from cepplan.planner.covering_plan import CoveringSettings, covering_section, expected_qor
from cepplan.planner.plan import read_plan
from cepplan.workload import load_workload
from tests.conftest import EXAMPLES
from tests.test_cli import run

MOBILE = EXAMPLES / "mobile" / "workload.json"


@pytest.mark.parametrize("own, used", [((0, 0, 50, 50), (10, 5, 60, 40)),
                                       ((0, 0, 100, 100), (20, 20, 40, 40)),
                                       ((0, 0, 30, 30), (0, 0, 30, 30))])
def test_expected_qor_matches_monte_carlo_on_even_events(own, used):
    rng = np.random.default_rng(0)
    points = rng.uniform(0, 100, size=(200_000, 2))
    def inside(r):
        return {i for i in np.flatnonzero((points[:, 0] >= r[0]) & (points[:, 0] <= r[2])
                                          & (points[:, 1] >= r[1]) & (points[:, 1] <= r[3]))}
    needed, got = inside(own), inside(used)
    p, r, _ = expected_qor(own, used)
    assert p == pytest.approx(precision(needed, got), abs=0.01)
    assert r == pytest.approx(recall(needed, got), abs=0.01)


def test_neighbours_are_the_k_nearest_within_the_distance():
    queries = [{"operator": "o", "region": [x, 0, x + 10, 10]} for x in (0, 3, 20, 100, 7)]
    assert processing_neighbours(queries, 0.0, 2, 50) == [[1, 4], [0, 4], [4, 1], [], [1, 0]]
    assert processing_neighbours(queries, 0.0, None, None)[3] == [2, 4, 1, 0]


def test_plan_carries_the_section_and_reads_it_back(tmp_path):
    out = tmp_path / "plan.json"
    result = CliRunner().invoke(app, ["optimize", str(MOBILE), "-o", str(out),
                                      "--covering-solver", "cpsat"])
    assert result.exit_code == 0, result.output
    assert "consumer queries" in result.output
    section = json.loads(out.read_text())["covering"]
    assert section["solver"] == "cpsat" and section["time_limit"] == 10.0
    workload = load_workload(MOBILE)
    assert [q["id"] for q in section["queries"]] == [q.id for q in workload.consumers.queries]
    expected = section["expected"]
    assert 0 <= expected["executions_with_reuse"] <= expected["executions_without_reuse"]
    assert dict(read_plan(out).covering) == section


def test_no_consumers_no_section():
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    assert covering_section(workload, workload.statistics, CoveringSettings()) == {}


@pytest.mark.parametrize("edit, path", [
    (lambda c: c["queries"][0].update(region=[10, 0, 5, 5]), "consumers.queries[0].region"),
    (lambda c: c["queries"][1]["qor"].update(recall=1.2), "consumers.queries[1].qor.recall"),
    (lambda c: c["neighbors"].update(k=0), "consumers.neighbors.k"),
    (lambda c: c["operators"]["avg_speed"].update(attribute="w"),
     "consumers.operators.avg_speed.attribute"),
    (lambda c: c["operators"]["avg_speed"].update(cost=-1), "consumers.operators.avg_speed.cost"),
    (lambda c: c["queries"][0].update(track=[[5, 1, 1], [2, 1, 1]]),
     "consumers.queries[0].track"),
])
def test_bad_consumers_exit_2_naming_the_place(tmp_path, edit, path):
    raw = json.loads(MOBILE.read_text())
    bad = copy.deepcopy(raw)
    edit(bad["consumers"])
    file = tmp_path / "workload.json"
    file.write_text(json.dumps(bad))
    result = CliRunner().invoke(app, ["optimize", str(file), "-o", str(tmp_path / "p.json")])
    assert isinstance(result.exception, InputError)
    assert path in str(result.exception)


def test_bad_consumers_exit_2_without_traceback(tmp_path):
    raw = json.loads(MOBILE.read_text())
    raw["consumers"]["queries"][0]["qor"]["precision"] = -0.1
    file = tmp_path / "workload.json"
    file.write_text(json.dumps(raw))
    result = run("optimize", str(file), "-o", str(tmp_path / "p.json"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "consumers.queries[0].qor.precision" in result.stderr
