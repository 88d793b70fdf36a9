"""plan.json: the trivial plan, round trips, fixed keys, fit checks and atomic writes."""

from __future__ import annotations

import os

import orjson
import pytest

from cepplan.errors import InputError
from cepplan.planner.plan import read_plan, trivial_plan, write_plan
from cepplan.workload import load_workload
from tests.conftest import EXAMPLES


@pytest.fixture(scope="module")
def network():
    return load_workload(EXAMPLES / "network" / "workload.json")


def test_trivial_plan_is_one_step_with_every_variable(network):
    plan = trivial_plan(network)
    for pattern in network.patterns:
        chosen = plan.patterns[pattern.name]
        assert chosen.detection.steps == (frozenset(pattern.variables),)
        assert chosen.detection.latency == 1
        assert chosen.order == pattern.variables


def test_plan_json_has_the_fixed_keys_and_round_trips(network, tmp_path):
    path = tmp_path / "plan.json"
    write_plan(trivial_plan(network), path)
    raw = orjson.loads(path.read_bytes())
    assert raw["format"] == "cepplan.plan/1"
    body = raw["patterns"]["syn_flood"]
    assert set(body) >= {"detection", "pareto", "naive_cost", "solver"}
    assert body["detection"] == {"steps": [["a", "s1", "s2", "s3"]], "expected_cost": None,
                                 "latency": 1}
    assert set(raw["provenance"]) >= {"cepplan", "seed", "seconds"}
    again = read_plan(path, network)
    assert again.patterns == trivial_plan(network).patterns
    assert again.workload_digest == network.digest
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temp file left behind


def test_plan_that_does_not_fit_the_workload_is_refused(network, tmp_path):
    path = tmp_path / "plan.json"
    raw = trivial_plan(network).to_json()
    raw["patterns"]["port_scan"]["detection"]["steps"] = [["p"], ["zz"]]
    raw["patterns"]["port_scan"]["order"] = ["p", "q"]
    raw["patterns"]["ghost"] = raw["patterns"]["attack"]
    del raw["patterns"]["tcp_session"]
    path.write_bytes(orjson.dumps(raw))
    with pytest.raises(InputError) as info:
        read_plan(path, network)
    paths = sorted(p.path for p in info.value.problems)
    assert paths == ["patterns.ghost", "patterns.port_scan.detection.steps",
                     "patterns.port_scan.order", "patterns.tcp_session"]


def test_not_a_plan_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"format": "something/else"}')
    with pytest.raises(InputError, match="not a cepplan plan"):
        read_plan(path)


def test_failed_write_keeps_the_old_file(network, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("old")
    plan = trivial_plan(network)
    broken = type(plan)(plan.patterns, plan.workload_path, plan.workload_digest,
                        {"unserialisable": object()})
    with pytest.raises(TypeError):
        write_plan(broken, path)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_written_files_get_ordinary_permissions(network, tmp_path):
    path = tmp_path / "plan.json"
    write_plan(trivial_plan(network), path)
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
