"""The in-process engine on a live stream (`StreamMatcher`): whatever the arrival order within
`max_delay` and however the arrivals are cut into micro-batches, the brute-force reference's
matches on the events; with arrivals shuffled further, exactly the events more than the delay
behind the latest before them are late (written aside, never matched), and the matches are
the reference's on the others. Every pattern kind: SEQ, AND, Kleene, NOT leading, inside,
trailing and in an AND; keys; a shared plan."""

from __future__ import annotations

import json
import tempfile
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.local.stream_output import LATE_FILE, StreamOutput
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.timed_out_output import output_folders
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import load_workload
from cepplan.workload.columns import EVENT_ID, EVENT_TS
from tests.engine.example_data import EXAMPLES, stepwise_plan
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_local_engine import read_matches
from tests.engine.test_shared_time_ranges import _chosen, random_workload

# Stocks plus a negation at each place the watermark treats differently
NEGATIONS = [
    {"name": "goog_then_no_msft", "structure": ["SEQ", "a:GOOG", ["NOT", "m:MSFT"]],
     "where": ["m.close > a.close"], "within": "4min"},
    {"name": "no_amzn_then_aapl", "structure": ["SEQ", ["NOT", "z:AMZN"], "p:AAPL"],
     "within": "3min"},
    {"name": "aapl_msft_no_goog", "structure": ["AND", "p:AAPL", "m:MSFT", ["NOT", "g:GOOG"]],
     "within": "5min"},
]
WORKLOAD_DIR = Path(tempfile.mkdtemp(prefix="cepplan-stream-test-"))


def _stocks_with_negations():
    raw = json.loads((EXAMPLES / "stocks" / "workload.json").read_text())
    for pattern in raw["patterns"]:
        if pattern["name"] == "v_shape":  # Kleene: a short window keeps the reference quick
            pattern["within"] = "6min"
    raw["patterns"] += NEGATIONS
    path = WORKLOAD_DIR / "workload.json"
    path.write_text(json.dumps(raw))
    return load_workload(path)


STOCKS = _stocks_with_negations()


def arrivals(events: pd.DataFrame, within: float, seed: int) -> pd.DataFrame:
    """The events in an arrival order where each is at most `within` behind the latest
    before it (each moved later by less than `within`), ids renumbered as arrival positions."""
    rng = np.random.default_rng(seed)
    key = events[EVENT_TS].to_numpy() + rng.uniform(0, within, len(events)) * (within > 0)
    out = events.iloc[np.argsort(key, kind="stable")].reset_index(drop=True)
    out[EVENT_ID] = np.arange(len(out))
    return out


def late_mask(stamps: np.ndarray, delay: float) -> np.ndarray:
    """Which arrivals are late: more than `delay` behind the latest timestamp before them."""
    latest = -np.inf
    out = np.zeros(len(stamps), dtype=bool)
    for i, ts in enumerate(stamps):
        out[i] = ts < latest - delay
        latest = max(latest, ts)
    return out


def stream(workload, data: dict, arrived: pd.DataFrame, delay: float, cuts: list[int],
           folder: Path, owned=None) -> tuple[dict, list[int], dict]:
    """The arrivals cut at `cuts` into files, each read and matched as a micro-batch (by a
    matcher keeping the rows `owned` says, default all): (matches, late events' ids,
    metrics)."""
    out = folder / "out"
    output = StreamOutput(out, {k: list(v) for k, v in data["types"].items()},
                          folders=output_folders(data["patterns"]))
    matcher = StreamMatcher(job_from_json(data), delay, output, positional_ids=True)
    matcher.owned = owned
    bounds = [0, *sorted(set(cuts)), len(arrived)]
    for number, (low, high) in enumerate(pairwise(bounds)):
        path = folder / f"part-{number:04d}.csv"
        write_events(arrived.iloc[low:high], workload, path)
        late = matcher.add(read_batches([str(path)], **data["reader"]), time.time())
        if late is not None:
            output.write_late(late)
        matcher.advance()
    matcher.advance(final=True)
    output.close()
    late_ids = [json.loads(line)["id"] for line in (out / LATE_FILE).read_text().splitlines()]
    metrics = matcher.metrics(data)
    timed = {name: figures["matches"] for name, figures in output.latency_figures().items()}
    assert timed == {k: v for k, v in metrics["matches"].items() if v}  # a latency per match
    return read_matches(out), sorted(late_ids), metrics


def expected(workload, events: pd.DataFrame) -> dict:
    found = reference_matches(workload, events)
    return {name: sorted(map(canonical, objs)) for name, objs in found.items() if objs}


def check(workload, data: dict, events: pd.DataFrame, delay: float, shuffle: float,
          seed: int, cuts: list[int]) -> None:
    arrived = arrivals(events, shuffle, seed)
    late = late_mask(arrived[EVENT_TS].to_numpy(), delay)
    with tempfile.TemporaryDirectory() as folder:
        got, late_ids, metrics = stream(workload, data, arrived, delay, cuts, Path(folder))
    assert late_ids == sorted(arrived.loc[late, EVENT_ID].tolist())
    want = expected(workload, arrived.loc[~late])
    assert got == want
    assert metrics["matches"] == {p.name: len(want.get(p.name, [])) for p in workload.patterns}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), delay=st.sampled_from([0.0, 0.5, 2.0]),
       cuts=st.lists(st.integers(1, 150), max_size=12), stepwise=st.booleans())
def test_arrivals_within_the_delay_give_the_reference_matches(seed, delay, cuts, stepwise):
    """Shuffled within max_delay: nothing late, every match of the reference."""
    events = synthesize(STOCKS, seed=seed, truth_draws=200, duration=60,
                        total_rate=1.0).events
    plan = stepwise_plan(STOCKS) if stepwise else trivial_plan(STOCKS)
    check(STOCKS, job_data(STOCKS, plan), events, delay, delay, seed, cuts)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), delay=st.sampled_from([0.5, 2.0]),
       cuts=st.lists(st.integers(1, 150), max_size=12))
def test_arrivals_beyond_the_delay_are_late_and_the_rest_match(seed, delay, cuts):
    """Shuffled within twice max_delay: the late events are exactly those more than the
    delay behind, written aside; the matches are the reference's on the others."""
    events = synthesize(STOCKS, seed=seed, truth_draws=200, duration=60,
                        total_rate=1.0).events
    check(STOCKS, job_data(STOCKS, trivial_plan(STOCKS)), events, delay, 2 * delay, seed,
          cuts)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 1000), cuts=st.lists(st.integers(1, 120), max_size=10),
       shuffle=st.sampled_from([0.0, 0.5, 1.0]))
def test_a_shared_plan_streams_the_reference_matches(seed, cuts, shuffle):
    """Ten random patterns sharing subtrees (the plan's sharing section), 0.5 s of delay."""
    workload = random_workload(seed % 5)
    data = _chosen(workload)
    assert (data.get("sharing") or {}).get("shared")
    check(workload, data, random_events(seed), 0.5, shuffle, seed, cuts)


def random_events(seed: int, count: int = 120) -> pd.DataFrame:
    """`count` events of `random_workload`'s 5 types over 40 s."""
    rng = np.random.default_rng(seed)
    types = [f"T{i:02d}" for i in range(5)]
    return pd.DataFrame({"__type": rng.choice(types, count),
                         "__ts": np.sort(rng.uniform(0, 40, count)),
                         "__id": np.arange(count), "price": rng.integers(0, 9, count),
                         "diff": rng.integers(0, 6, count).astype(float)})
