"""The statistics a live stream measures over its horizon (`OnlineStatistics`) equal those
`cepplan stats` measures on a file holding the same events: rates and their intervals per
type, region rates, selectivities with their intervals, occurrence models."""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cepplan.adaptive.online_stats import OnlineStatistics, default_horizon
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload
from tests.engine.example_data import EXAMPLES
from tests.in_process import cepplan

FRAUD = load_workload(EXAMPLES / "fraud" / "workload.json")
EVENTS = pd.read_csv(EXAMPLES / "fraud" / "events.csv")


class _Discard:
    def write(self, *_args) -> None:
        pass

    def arrivals(self, *_args) -> None:
        pass


def streamed(horizon: float, pieces: int, folder: Path,
             most: int) -> tuple[OnlineStatistics, float]:
    """The fraud events read as `pieces` micro-batches, observed: the statistics and the
    watermark reached."""
    data = job_data(FRAUD, trivial_plan(FRAUD))
    matcher = StreamMatcher(job_from_json(data), 0.0, _Discard(), positional_ids=True)
    online = OnlineStatistics(FRAUD, horizon, max_events=most)
    matcher.observers.append(online.observe)
    size = -(-len(EVENTS) // pieces)
    for number in range(pieces):
        path = folder / f"part-{number}.csv"
        EVENTS.iloc[number * size:(number + 1) * size].to_csv(path, index=False)
        matcher.add(read_batches([str(path)], **data["reader"]), time.time())
        matcher.advance()
    return online, matcher.watermark


def _close(got, want, path="") -> None:
    if isinstance(want, dict):
        assert set(got) == set(want), path
        for key in want:
            _close(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for index, (a, b) in enumerate(zip(got, want, strict=True)):
            _close(a, b, f"{path}[{index}]")
    elif want is None and isinstance(got, float):  # stats.json writes no infinity
        assert not math.isfinite(got), path
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), path
    else:
        assert got == want, path


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(horizon=st.sampled_from([150.0, 400.0, default_horizon(FRAUD)]),
       pieces=st.integers(1, 7), most=st.sampled_from([20_000, 2_000]))
@example(horizon=500.0, pieces=3, most=2_000)  # 4,000 events in the horizon: the latest kept
def test_the_horizons_statistics_are_those_of_cepplan_stats(horizon, pieces, most):
    """The horizon's events, or its latest `most` when it holds more."""
    with tempfile.TemporaryDirectory() as folder:
        check_horizon(horizon, pieces, most, Path(folder))


def check_horizon(horizon: float, pieces: int, most: int, tmp_path: Path) -> None:
    online, watermark = streamed(horizon, pieces, tmp_path, most)
    document = online.measure(watermark)
    inside = EVENTS[(EVENTS["ts"] >= watermark - horizon) & (EVENTS["ts"] < watermark)]
    inside = inside[inside["ts"] >= inside["ts"].nlargest(most).min()]
    events = tmp_path / "horizon.csv"
    inside.to_csv(events, index=False)
    out = tmp_path / "stats.json"
    done = cepplan("stats", events, "-w", EXAMPLES / "fraud" / "workload.json", "-o", out,
                   "--engine", "local", "--sample", 20_000, "-q")
    assert done.returncode == 0, done.stderr
    want = json.loads(out.read_text())
    for section in ("rates", "selectivities", "models", "types", "occurrence", "observed",
                    "keys", "selectivity_details"):
        _close(document[section], want[section], section)
    assert document["rows"]["read"] == want["rows"]["read"] == len(inside)


def test_an_empty_horizon_measures_nothing():
    online = OnlineStatistics(FRAUD, 10.0)
    assert online.measure(5.0) is None


def test_a_re_plan_keeps_the_plans_figures_the_measurement_cannot_tell_apart():
    """`settled`: a figure whose 95 % interval holds the plan's own keeps the plan's (a
    selectivity seen on a few events); one whose interval excludes it is the measured one."""
    from cepplan.adaptive.online_stats import settled
    from cepplan.workload.model import Statistics

    def figures(rate_a: float, rate_b: float, share: float) -> Statistics:
        return Statistics(rates={"A": rate_a, "B": rate_b},
                          selectivities={"p": {"a.x < 2": share}})

    point, low, high = figures(9.0, 2.2, 0.0005), figures(8.0, 1.5, 0.00001), \
        figures(10.0, 3.0, 0.003)
    basis = {"rates": {"A": 1.0, "B": 2.0}, "selectivities": {"p": {"a.x < 2": 0.0029}}}
    kept = settled(point, low, high, basis)
    assert kept.rates == {"A": 9.0, "B": 2.0}  # A changed beyond noise; B did not
    assert kept.selectivities == {"p": {"a.x < 2": 0.0029}}
    assert settled(point, low, high, {}).rates == point.rates  # no basis: as measured
