"""A live stream whose job is replaced between micro-batches (`StreamMatcher.switch`): however
many switches, between whichever plans of one workload (trivial, one variable per step, the
search's, shared or not, so that a look-ahead pattern's lag changes; the optimizer's, other
points of its Pareto fronts), at whichever
micro-batches, the matches are the brute-force reference's as a multiset: none lost, none
twice."""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from types import MappingProxyType

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.stream import StreamMatcher, looks_ahead
from cepplan.engine_adapter.local.stream_output import StreamOutput
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.planner.compose import Settings
from cepplan.planner.optimize import optimize
from cepplan.planner.plan import Plan, trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from tests.engine.example_data import stepwise_plan
from tests.engine.test_local_engine import read_matches
from tests.engine.test_shared_time_ranges import _chosen, random_workload
from tests.engine.test_stream_matches import STOCKS, arrivals, expected, random_events

SHARED = random_workload(2)  # its search shares subtrees and one pattern looks ahead


def _stocks_plans() -> list[dict]:
    optimized = optimize(STOCKS, STOCKS.statistics, Settings(time_limit=5.0)).plan
    return [job_data(STOCKS, trivial_plan(STOCKS)), job_data(STOCKS, stepwise_plan(STOCKS)),
            _chosen(STOCKS), job_data(STOCKS, optimized),
            job_data(STOCKS, _other_pareto_points(optimized))]


def _other_pareto_points(plan: Plan) -> Plan:
    """Each pattern on the point of its Pareto front farthest from the one chosen."""
    patterns = {name: replace(p, detection=p.pareto[-1] if p.pareto[-1] != p.detection
                              else p.pareto[0]) if p.pareto else p
                for name, p in plan.patterns.items()}
    assert any(p.detection != plan.patterns[n].detection for n, p in patterns.items())
    return replace(plan, patterns=MappingProxyType(patterns))


def _shared_plans() -> list[dict]:
    shared = _chosen(SHARED)
    return [shared, {k: v for k, v in shared.items() if k != "sharing"},
            job_data(SHARED, trivial_plan(SHARED))]


STOCKS_PLANS = _stocks_plans()
SHARED_PLANS = _shared_plans()


def test_the_shared_plans_change_a_look_ahead_patterns_lag():
    """The premise of the shared case: matched together, a look-ahead pattern drags the
    others to its lag; alone, they are owned at the watermark."""
    job = job_from_json(SHARED_PLANS[0])
    assert SHARED_PLANS[0]["sharing"]["shared"]
    assert any(looks_ahead(p) for p in job.patterns)
    assert not all(looks_ahead(p) for p in job.patterns)


def switched_stream(workload, plans: list[dict], order: list[int], arrived: pd.DataFrame,
                    delay: float, cuts: list[int], switch_at: list[int], folder: Path) -> dict:
    """The arrivals cut at `cuts` into micro-batches; before micro-batch k in `switch_at`
    the job becomes the next plan of `order`: the matches written."""
    out = folder / "out"
    data = plans[order[0]]
    output = StreamOutput(out, {k: list(v) for k, v in data["types"].items()})
    matcher = StreamMatcher(job_from_json(data), delay, output, positional_ids=True)
    bounds = [0, *sorted(set(cuts)), len(arrived)]
    following = iter(order[1:])
    for number, (low, high) in enumerate(pairwise(bounds)):
        for _ in range(switch_at.count(number)):
            chosen = next(following, None)
            if chosen is not None:
                matcher.switch(job_from_json(plans[chosen]))
        path = folder / f"part-{number:04d}.csv"
        write_events(arrived.iloc[low:high], workload, path)
        matcher.add(read_batches([str(path)], **data["reader"]), time.time())
        matcher.advance()
    matcher.advance(final=True)
    output.close()
    return read_matches(out)


def check(workload, plans, order, events, delay, seed, cuts, switch_at) -> None:
    arrived = arrivals(events, delay, seed)
    with tempfile.TemporaryDirectory() as folder:
        got = switched_stream(workload, plans, order, arrived, delay, cuts, switch_at,
                              Path(folder))
    assert got == expected(workload, arrived)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), delay=st.sampled_from([0.0, 0.5, 2.0]),
       cuts=st.lists(st.integers(1, 150), min_size=1, max_size=12),
       order=st.lists(st.integers(0, len(STOCKS_PLANS) - 1), min_size=2, max_size=5),
       switch_at=st.lists(st.integers(0, 12), min_size=1, max_size=5))
def test_switching_plans_keeps_the_reference_matches(seed, delay, cuts, order, switch_at):
    """Stocks with a negation at each place the watermark treats differently."""
    events = synthesize(STOCKS, seed=seed, truth_draws=200, duration=60,
                        total_rate=1.0).events
    check(STOCKS, STOCKS_PLANS, order, events, delay, seed, cuts, switch_at)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 1000), cuts=st.lists(st.integers(1, 120), min_size=1, max_size=10),
       order=st.lists(st.integers(0, 2), min_size=2, max_size=5),
       switch_at=st.lists(st.integers(0, 10), min_size=1, max_size=5),
       delay=st.sampled_from([0.0, 0.5]))
def test_switching_in_and_out_of_a_shared_plan_keeps_the_reference_matches(
        seed, cuts, order, switch_at, delay):
    """Ten random patterns: shared (one lag for all) ↔ unshared (each its own lag)."""
    check(SHARED, SHARED_PLANS, order, random_events(seed), delay, seed, cuts, switch_at)
