"""The Linear-Road-like generator: the traffic example's deriving patterns find the episodes
it placed (each window opens within seconds of its episode and closes soon after it ends),
on fresh streams and on the example's own events file; `cepplan synth --linear-road`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.plan import trivial_plan
from cepplan.stats.linear_road import linear_road
from cepplan.workload import load_workload
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traffic"
WORKLOAD = load_workload(EXAMPLE / "workload.json")


def _derived(events: pd.DataFrame) -> list[tuple]:
    result = run_local(events, job_from_json(job_data(WORKLOAD, trivial_plan(WORKLOAD))))
    frame = result.windows.frame()
    return [(k[0], c, s, e) for k, c, s, e in frame.itertuples(index=False) if c != "clear"]


def _check(derived: list[tuple], episodes: list[dict], duration: float) -> None:
    assert len(derived) == len(episodes)
    for episode in episodes:
        found = [w for w in derived if w[0] == episode["segment"] and w[1] == episode["context"]
                 and episode["start"] <= w[2] <= episode["start"] + 30]
        assert len(found) == 1, episode
        end = min(found[0][3], duration)
        assert episode["end"] <= end <= episode["end"] + 90, (episode, found)


@pytest.mark.parametrize("seed", [1, 2])
def test_derived_windows_follow_the_episodes(seed):
    result = linear_road(segments=3, duration=1500, seed=seed, congestion_share=0.4)
    _check(_derived(result.events), result.truth["episodes"], 1500)
    assert result.truth["coverage"]["congestion"] == pytest.approx(0.4)


def test_example_events_show_the_contexts():
    raw = pd.read_csv(EXAMPLE / "events.csv")
    events = raw.rename(columns={"sec": EVENT_TS, "report_id": EVENT_ID})
    events.insert(0, EVENT_TYPE, "PositionReport")
    truth = json.loads((EXAMPLE / "events.truth.json").read_text())
    _check(_derived(events), truth["episodes"], truth["duration"])
    assert (EXAMPLE / "events.csv").stat().st_size < 1_000_000


def test_synth_linear_road_command(tmp_path):
    from typer.testing import CliRunner

    from cepplan.cli.app import app
    out = tmp_path / "lr.csv"
    run = CliRunner().invoke(app, ["synth", str(EXAMPLE / "workload.json"), "--linear-road",
                                   "--duration", "900", "--segments", "2", "-o", str(out)])
    assert run.exit_code == 0, run.output
    truth = json.loads((tmp_path / "lr.truth.json").read_text())
    assert {e["segment"] for e in truth["episodes"]} == {0, 1}
    assert len(pd.read_csv(out)) == truth["counts"]["PositionReport"]


def test_measured_context_time_recovers_the_generated_coverage():
    from cepplan.stats.context_time import context_time

    result = linear_road(segments=3, duration=1800, seed=5, congestion_share=0.35)
    measured = context_time(result.events, WORKLOAD)
    truth = result.truth["coverage"]
    for context in ("clear", "congestion", "accident"):  # detection lags by a few seconds
        assert measured["context_shares"][context] == pytest.approx(truth[context], abs=0.02)
    assert sum(measured["state_shares"].values()) == pytest.approx(1.0)
    assert measured["windows"]["congestion"] == 3 * 2


def test_metrics_section_puts_measured_beside_planned():
    from cepplan.engine_adapter.runtime.contexts import metrics_section
    from cepplan.planner.compose import Settings
    from cepplan.planner.optimize import optimize

    result = linear_road(segments=2, duration=1200, seed=3, congestion_share=0.3)
    plan = optimize(WORKLOAD, WORKLOAD.statistics, Settings()).plan
    job = job_from_json(job_data(WORKLOAD, plan))
    run = run_local(result.events, job)
    section = metrics_section(run, job)
    toll = section["patterns"]["toll"]
    assert toll["matches"] == len(run.matches["toll"]) > 0
    assert 0.5 < toll["suspended_time_share"] < 0.8  # congested ~30 % of the time
    assert toll["rows_seen"] < toll["rows_of_its_types"]
    assert section["windows"]["congestion"] == 2 * 2


def test_stats_measures_contexts_through_spark(spark):
    from cepplan.stats.context_time import context_time, measure_contexts

    measured = measure_contexts(spark, [str(EXAMPLE / "events.csv")], WORKLOAD)
    raw = pd.read_csv(EXAMPLE / "events.csv")
    events = raw.rename(columns={"sec": EVENT_TS, "report_id": EVENT_ID})
    events.insert(0, EVENT_TYPE, "PositionReport")
    assert measured == context_time(events, WORKLOAD)
    truth = json.loads((EXAMPLE / "events.truth.json").read_text())["coverage"]
    assert measured["context_shares"]["congestion"] == pytest.approx(truth["congestion"],
                                                                     abs=0.02)
