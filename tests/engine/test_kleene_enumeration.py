"""The matcher's enumeration of a Kleene variable's subsets without order-dependent
predicates (`MatchContext._every_subset`, a speed path) gives the same matches, in the same
order, with the same cap cuts, as the general bitmask enumeration, which the same pattern
takes once it has a FIRST predicate that always holds."""

from __future__ import annotations

import random

import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import TYPES, workload

SHAPES = [
    (["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"], ["a.v <= b.v", "c.w > 1"]),
    (["AND", ["KLEENE", "b:B"], "a:A"], ["LAST(b.v) >= a.v"]),
    (["SEQ", ["KLEENE", "b:B"], ["NOT", "x:A"], "c:C"], ["x.v < b.v"]),
]


@pytest.mark.parametrize("cap", [1, 2, 3, 16])
@pytest.mark.parametrize("shape", range(len(SHAPES)))
def test_every_subset_equals_the_bitmask_enumeration(shape, cap):
    structure, where = SHAPES[shape]
    patterns = [{"name": "fast", "structure": structure, "where": where, "within": 4},
                {"name": "general", "structure": structure,
                 "where": [*where, "FIRST(b.v) > -1"], "within": 4}]
    wl = workload(patterns, kleene_cap=cap)
    job = job_from_json(job_data(wl, trivial_plan(wl)))
    assert not job.stages["fast"].masks and job.stages["general"].masks
    rng = random.Random(shape * 10 + cap)
    rows = [(rng.choice(TYPES), rng.uniform(0, 12), rng.randint(0, 4),
             rng.choice([0.5, 2.0, 3.5]), "x") for _ in range(60)]
    result = run_local(frame(rows), job, chunk_events=16)
    assert result.matches["fast"]
    assert [m["events"] for m in result.matches["fast"]] == \
        [m["events"] for m in result.matches["general"]]
    assert result.cap_hits["fast"] == result.cap_hits["general"]
    assert cap == 16 or result.cap_hits["fast"] > 0
