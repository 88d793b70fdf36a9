"""Workloads written without the newer pattern constructs mean what they meant: every
example loads to the same core patterns (one per pattern written, under its own name, its
variables each of one type) and its job names no pattern as an alternative of another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*/workload.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_examples_load_to_the_patterns_written(path):
    written = [p["name"] for p in json.loads(path.read_text())["patterns"]]
    workload = load_workload(path)
    assert [p.name for p in workload.patterns] == written
    assert all(p.output_name == p.name for p in workload.patterns)
    assert not any(o.alternatives for p in workload.patterns for o in p.operands)
    job = job_data(workload, trivial_plan(workload))
    assert not any("reported_as" in p for p in job["patterns"])
