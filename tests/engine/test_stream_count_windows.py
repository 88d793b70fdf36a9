"""Count windows (`"within": "N events"`) on the in-process live stream: whatever the arrival
order within `max_delay` and however the arrivals are cut into micro-batches, the matches are
the brute-force reference's (positions numbered over the whole input, every type counting),
also when the stream's state goes through a checkpoint between two micro-batches; several
partitionings and a time window in one job; and `cepplan run --follow` killed and restarted
from its checkpoint writes each match once."""

from __future__ import annotations

import json
import tempfile
import time
from itertools import pairwise
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.checkpoint import decode, encode, restore
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.local.stream_output import StreamOutput
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_count_windows import EVENT, count_reference, pattern
from tests.engine.test_local_engine import read_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_stream_matches import arrivals
from tests.engine.workloads import workload

# name -> (template of test_count_windows, count, keyed); one job holds them all
COUNTED = {"join": ("join", 3, True), "kleene": ("kleene", 4, False),
           "not_middle": ("not_middle", 2, True), "same_type": ("same_type", 2, False)}
TIMED = {"name": "timed", "structure": ["SEQ", "a:A", "b:B"], "where": ["b.v > a.v"],
         "within": 2, "partition_by": ["k"]}


def patterns() -> list[dict]:
    out = [{**pattern(template, f"{count} events", keyed)[0], "name": name}
           for name, (template, count, keyed) in COUNTED.items()]
    return [*out, TIMED]


def streamed(wl, arrived, delay: float, cuts: list[int], restart_at: int,
             folder: Path) -> dict:
    """The follow loop's steps over the arrivals cut at `cuts` into micro-batches; after
    micro-batch `restart_at`, the matcher's state goes through a checkpoint's bytes into a
    new matcher."""
    data = job_data(wl, trivial_plan(wl))
    output = StreamOutput(folder / "out", {k: list(v) for k, v in data["types"].items()})
    matcher = StreamMatcher(job_from_json(data), delay, output, positional_ids=False)
    bounds = [0, *sorted(set(cuts)), len(arrived)]
    for number, (low, high) in enumerate(pairwise(bounds)):
        path = folder / f"part-{number:04d}.csv"
        write_events(arrived.iloc[low:high], wl, path)
        assert matcher.add(read_batches([str(path)], **data["reader"]), time.time()) is None
        matcher.advance()
        if number == restart_at:
            saved = decode(encode(matcher, {}))
            matcher = StreamMatcher(job_from_json(data), delay, output, positional_ids=False)
            restore(matcher, saved)
    matcher.advance(final=True)
    output.close()
    return read_matches(folder / "out")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=30), delay=st.sampled_from([0.0, 1.0, 3.0]),
       every=st.integers(1, 6), restart_at=st.integers(0, 5), seed=st.integers(0, 100))
def test_stream_count_windows_equal_reference(rows, delay, every, restart_at, seed):
    """Ties of timestamps everywhere (ts from 0 to 4), two keys, micro-batches of `every`
    arrivals, a restart from a checkpoint after one of them."""
    events = frame(sorted(rows, key=lambda r: r[1]))
    arrived = arrivals(events, delay, seed)
    want = {name: sorted(map(canonical, count_reference(template, count, keyed, arrived)))
            for name, (template, count, keyed) in COUNTED.items()}
    timed = reference_matches(workload([TIMED]), arrived)["timed"]
    want["timed"] = sorted(map(canonical, timed))
    want = {name: found for name, found in want.items() if found}
    with tempfile.TemporaryDirectory() as folder:
        got = streamed(workload(patterns(), csv=True), arrived, delay,
                       list(range(every, len(rows), every)), restart_at, Path(folder))
    got = {name: [(name, *m[1:]) for m in found] for name, found in got.items()}
    want = {name: [(name, *m[1:]) for m in found] for name, found in want.items()}
    assert got == want


def test_positions_continue_over_micro_batches():
    """A worked case: A0 | C1 C2 | B3 on one key, one event per micro-batch: (A, B) lies 3
    positions apart, so it matches within 3 events and not within 2, though no micro-batch
    holds both the C events and A."""
    rows = [("A", 0, 1, 0.5, "x"), ("C", 1, 0, 0.5, "x"), ("C", 2, 0, 0.5, "x"),
            ("B", 3, 5, 0.5, "x")]
    found = {}
    for count in (2, 3):
        wl = workload(pattern("join", f"{count} events", True), csv=True)
        with tempfile.TemporaryDirectory() as folder:
            found[count] = len(streamed(wl, frame(rows), 0.0, [1, 2, 3], 1,
                                        Path(folder)).get("p", []))
    assert found == {2: 0, 3: 1}


def test_follow_killed_and_restarted_from_its_checkpoint(tmp_path):
    """`cepplan run --follow` with a checkpoint over the first third of a stream, killed
    (SIGKILL) once it recorded that file, restarted on the rest: every match of the
    reference once, the positions carried over the kill."""
    import random
    import signal

    from tests.engine.follow_process import follow_until_recorded
    from tests.engine.workloads import CSV_SOURCE, TYPES
    from tests.in_process import cepplan

    document = {"format": "cepplan.workload/1", "time_unit": "s", "source": CSV_SOURCE,
                "event_types": {t: {"attributes": {"v": "long", "w": "double", "k": "string"}}
                                for t in TYPES},
                "patterns": patterns(), "statistics": {"rates": dict.fromkeys(TYPES, 1)}}
    (tmp_path / "w.json").write_text(json.dumps(document))
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", str(tmp_path / "w.json"), "-o", str(plan), "-q").returncode == 0
    rng = random.Random(5)
    events = frame(sorted(((rng.choice(TYPES), rng.randint(0, 8), rng.randint(0, 4), 0.5,
                            rng.choice("xy")) for _ in range(24)), key=lambda r: r[1]))
    wl = workload(patterns(), csv=True)
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    source.mkdir()

    def drop(number: int) -> None:
        hidden = source / f".part-{number}.csv"
        write_events(events.iloc[8 * number:8 * (number + 1)], wl, hidden)
        hidden.rename(source / f"part-{number}.csv")

    drop(0)
    args = ["run", str(plan), "--follow", str(source), "-o", str(out), "--checkpoint",
            str(checkpoint), "-q", "--trigger", "0.02"]
    follow_until_recorded(args, checkpoint, signal.SIGKILL)
    drop(1)
    drop(2)
    (source / "_END").touch()
    done = cepplan(*args)
    assert done.returncode == 0, done.stderr
    want = {name: sorted(map(canonical, count_reference(template, count, keyed, events)))
            for name, (template, count, keyed) in COUNTED.items()}
    want["timed"] = sorted(map(canonical, reference_matches(workload([TIMED]),
                                                             events)["timed"]))
    got = read_matches(out)
    assert {n: [m[1:] for m in v] for n, v in got.items()} == \
        {n: [m[1:] for m in v] for n, v in want.items() if v}
    assert sum(map(len, want.values())) >= 5
