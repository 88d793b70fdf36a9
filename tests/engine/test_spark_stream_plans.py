"""A plan taking over a Spark stream (`stream_plans.py`): the job's stateful step run as
Spark runs it — per micro-batch, the rows that arrived and Spark's own `GroupState` holding
only what the step put in it (so every micro-batch is a restart from the checkpoint) — with
plan files among the arrivals. Switched at any micro-batches, and with a micro-batch run
twice (a kill before its commit), the matches are the brute-force reference's, none lost,
none twice; a file that is not a whole job of the stream's workload is refused with one
warning naming it and the old plan matches on. No JVM: Spark's streaming test is
tests/engine/test_spark_stream_adaptive.py."""

from __future__ import annotations

import json
import tempfile
from itertools import pairwise
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.streaming.state import GroupState

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.stream_plans import (
    PlanRefused,
    plan_to_switch,
    publish_plan,
    published,
)
from cepplan.engine_adapter.spark.stream_state import MATCHES, StreamStep, state_schema
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import load_workload
from tests.engine.example_data import EXAMPLES, stepwise_plan
from tests.engine.reference_matcher import canonical
from tests.engine.test_stream_matches import STOCKS, arrivals, expected

PLANS = [job_data(STOCKS, trivial_plan(STOCKS)), job_data(STOCKS, stepwise_plan(STOCKS))]


def _state(data: dict, value: tuple | None) -> GroupState:
    """Spark's group state as a micro-batch finds it: what the last committed one left."""
    from pyspark.sql import Row

    return GroupState(Row(*value) if value is not None else None, 0, 0, "NoTimeout", False,
                      False, value is not None, False, False, -1, b"", state_schema(data))


def _rows(texts: list[tuple[str, str, bool]], end: bool) -> pd.DataFrame:
    """A micro-batch's arrivals: (file name, text, whether it is a plan) and an end marker."""
    texts = [*texts, *([("end/end-1.txt", "end\n", False)] if end else [])]
    return pd.DataFrame({"key": 0, "source": [t[0] for t in texts], "line": 0,
                         "arrived": 1.0, "value": [t[1] for t in texts],
                         "end": [end and t[0].startswith("end/") for t in texts],
                         "plan": [t[2] for t in texts]})


def _run(data: dict, batches: list[pd.DataFrame], replay: int | None = None,
         group: int = 0, groups: int = 1) -> tuple[dict, dict]:
    """The batches through the step of key group `group` out of `groups`, state carried as
    Spark carries it (micro-batch `replay` run once more from the state before it, its
    first outputs dropped as an uncommitted micro-batch's): the matches written, and the
    stream's figures."""
    value, found, figures = None, {}, {}
    step = StreamStep(data, 1.0, list(range(groups)) if groups > 1 else None)
    for number, rows in enumerate(batches):
        for attempt in range(2 if number == replay else 1):
            state = _state(data, value)
            out = pd.concat(list(step((group,), iter([rows.copy()]), state)))
            if number == replay and attempt == 0:
                continue
        value = tuple(state.get)
        for line in out.loc[out["output"] == MATCHES, "value"]:
            obj = json.loads(line)
            found.setdefault(obj["pattern"], []).append(canonical(obj))
        figures = {**figures, **{k: json.loads(v) for k, v in
                                 out.loc[out["output"] == "figures", ["output", "value"]]
                                 .itertuples(index=False)}}
    return {k: sorted(v) for k, v in found.items()}, figures.get("figures", {})


def _batches(events: pd.DataFrame, cuts: list[int], plans: dict[int, list[str]],
             folder: Path, wl=STOCKS) -> list[pd.DataFrame]:
    """The events cut at `cuts` into files (of workload `wl`'s source), micro-batch k also
    bringing `plans[k]` (plan files' texts); the last brings the end marker."""
    bounds = [0, *sorted(set(cuts)), len(events)]
    batches = []
    for number, (low, high) in enumerate(pairwise(bounds)):
        path = folder / f"part-{number:04d}.csv"
        write_events(events.iloc[low:high], wl, path)
        texts = [(f"plans/plan-{number}-{i}.json", text, True)
                 for i, text in enumerate(plans.get(number, []))]
        texts.append((str(path), path.read_text(), False))
        batches.append(_rows(texts, end=number == len(bounds) - 2))
    return batches


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 150), min_size=2,
                                                  max_size=8),
       switch_at=st.lists(st.integers(0, 8), min_size=1, max_size=3),
       replay=st.integers(0, 8))
def test_plans_arriving_in_the_stream_keep_the_reference_matches(seed, cuts, switch_at,
                                                                 replay):
    events = arrivals(synthesize(STOCKS, seed=seed, truth_draws=200, duration=60,
                                 total_rate=1.0).events, 0.0, seed)
    plans: dict[int, list[str]] = {}
    for index, number in enumerate(switch_at):  # to the other plan and back
        plans.setdefault(number, []).append(json.dumps(PLANS[(index + 1) % 2]))
    with tempfile.TemporaryDirectory() as folder:
        batches = _batches(events, cuts, plans, Path(folder))
    got, figures = _run(PLANS[0], batches, replay)
    assert got == expected(STOCKS, events)
    arrived = [(number + 1, name.split("/")[-1]) for number, rows in enumerate(batches)
               for name in rows.loc[rows["plan"], "source"]]
    assert [(s["micro_batch"], s["plan_file"]) for s in figures["stream"]["switches"]] == \
        arrived


def test_a_half_written_or_foreign_plan_is_refused_and_the_old_plan_kept(tmp_path, capsys):
    events = arrivals(synthesize(STOCKS, seed=3, truth_draws=200, duration=60,
                                 total_rate=1.0).events, 0.0, 3)
    fraud = load_workload(EXAMPLES / "fraud" / "workload.json")
    whole = json.dumps(PLANS[1])
    foreign = json.dumps(job_data(fraud, trivial_plan(fraud)))
    batches = _batches(events, [40, 80], {1: [whole[:len(whole) // 2], foreign]}, tmp_path)
    got, figures = _run(PLANS[0], batches)
    assert got == expected(STOCKS, events)
    assert figures["stream"]["switches"] == [] and len(figures["stream"]["plans_refused"]) == 2
    warned = capsys.readouterr().err
    assert "plans/plan-1-0.json" not in warned  # the file's name, not its folder's path
    assert "plan-1-0.json: not a whole job.json" in warned
    assert "plan-1-1.json: made for another workload (card-fraud) than the stream's " \
        "(stocks)" in warned
    assert "the stream keeps its plan" in warned


def test_plan_to_switch_refuses_what_cannot_take_over():
    whole = json.dumps(PLANS[1])
    job, new = plan_to_switch(whole, "plan-1.json", PLANS[0])
    assert new == PLANS[1] and [p.name for p in job.patterns] == \
        [p["name"] for p in PLANS[1]["patterns"]]
    for text, says in ((whole[:-1], "not a whole job.json"), ("", "not a whole job.json"),
                       ("[1]", "not a job this stream can run"),
                       (json.dumps({**PLANS[1], "reader": None}), "another source")):
        try:
            plan_to_switch(text, "plan-1.json", PLANS[0])
        except PlanRefused as err:
            assert err.message.startswith("plan-1.json: ") and says in err.message
            assert err.message.endswith("the stream keeps its plan")
        else:
            raise AssertionError(f"{text[:40]!r} was taken")


def test_a_published_plan_is_whole_and_read_back_in_order(tmp_path):
    for number in (1, 2, 10):
        assert publish_plan(tmp_path, number, {**PLANS[number % 2], "n": number}) == \
            f"plan-{number}.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["plan-1.json", "plan-10.json", "plan-2.json"]  # no temporary left, none hidden
    (tmp_path / "plan-3.json").write_text("{")  # dropped by hand, half-written
    (tmp_path / "plan-x.json").write_text("{}")
    assert {n: p and p["n"] for n, p in published(tmp_path).items()} == \
        {1: 1, 2: 2, 3: None, 10: 10}
    assert list(published(tmp_path)) == [1, 2, 3, 10]


def test_the_progress_line_shows_the_last_switch(capsys):
    from cepplan.engine_adapter.spark.follow import _Progress

    meter = _Progress(PLANS[0])
    figures = {"rate": 10.0, "watermark": 60.0, "matches": 3, "late_events": 0,
               "state_rows": 5, "latency": None}
    meter(figures)
    meter({**figures, "switch": {"micro_batch": 8, "watermark": 59.0, "plan_file": "plan-1",
                                 "modelled_gain": 2.5}})
    meter(figures)
    before, *after = capsys.readouterr().err.split("\r")[1:]
    assert "switched" not in before
    assert all("  plan switched at batch 8 (2.50x)\x1b[K" in line for line in after), after


def test_a_restarted_driver_keeps_its_records_and_numbers_on(tmp_path):
    """`cepplan run` restarted from the checkpoint: the re-plans it published and those it
    kept are its record, a drift it handled is not re-planned again (Spark replays the
    micro-batch that reported it), and its next plan comes after every plan-N.json."""
    from cepplan.engine_adapter.spark.stream_replan import KEPT, StreamReplanner
    from cepplan.planner.plan import write_plan

    fraud = load_workload(EXAMPLES / "fraud" / "workload.json")
    plan = trivial_plan(fraud)
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"
    (checkpoint / "plans").mkdir(parents=True)
    write_plan(plan, out / "plans" / "plan-1.json")
    published_record = {"reported_at": 5, "micro_batch": 5, "watermark": 500.0,
                        "reason": ["why"], "changes": ["what"], "switched": False,
                        "plan_file": "plans/plan-1.json", "modelled_gain": 3.0,
                        "replan_seconds": 1.0}
    kept_record = {**published_record, "reported_at": 9, "micro_batch": 9, "changes": [],
                   "plan_file": None, "modelled_gain": 1.0}
    publish_plan(checkpoint / "plans", 1, {**job_data(fraud, plan), "replan": published_record})
    publish_plan(checkpoint / "plans", 4, job_data(fraud, plan))  # dropped by hand
    (checkpoint / KEPT).write_text(json.dumps([kept_record]))
    replanner = StreamReplanner(fraud, plan, job_data(fraud, plan), checkpoint, out, print)
    assert replanner.number == 4 and replanner.handled == {5, 9}
    replanner({"drift": {"micro_batch": 9, "watermark": 900.0, "reason": ["again"]}})
    switch = {"micro_batch": 7, "watermark": 650.0, "plan_file": "plan-1.json"}
    replanner({"switch": switch})
    assert switch["modelled_gain"] == 3.0  # for the progress line
    stream = {"switches": [{"micro_batch": 7, "watermark": 650.0, "plan_file": "plan-1.json"}],
              "drifts": [{"micro_batch": 5, "statistics": {"types": {"A": {"rate": 2.0}}}}]}
    replanner.finish(stream)
    assert stream["replans"] == [{**published_record, "switched": True, "micro_batch": 7,
                                  "watermark": 650.0}, kept_record]
    assert stream["replans_refused"] == [] and stream["drifts"][0]["rates"] == {"A": 2.0}
