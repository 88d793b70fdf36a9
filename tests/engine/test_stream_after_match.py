"""After-match skips on the in-process live stream: whatever the arrival order within
`max_delay` and however the arrivals are cut into micro-batches, the matches kept are the
reference's (the batch run's), also when the skips' state goes through a checkpoint's JSON
between two micro-batches; and `cepplan run --follow` writes them."""

from __future__ import annotations

import json
import tempfile
import time
from itertools import pairwise
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.local.stream_output import StreamOutput
from cepplan.engine_adapter.local.stream_skip import StreamSkips, decided_below
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.reference_after_match import reference_skip
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_after_match import TEMPLATES
from tests.engine.test_local_engine import read_matches
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_stream_matches import arrivals
from tests.engine.workloads import TYPES, workload

SKIPS = {"seq_keyed": {"to_last": "b"}, "kleene": "past_last_event",
         "alternation_optional": "to_next_event", "and_keyed": "past_last_event",
         "lagging_core": "past_last_event"}
# core patterns with different look-ahead: without c, the NOT trails (owned a window later)
STREAM_TEMPLATES = {**TEMPLATES, "lagging_core": (
    {"structure": ["SEQ", "a:A", ["NOT", "x:B"], ["OPTIONAL", "c:C"]], "where": ["x.v > a.v"],
     "within": 3}, None)}
EVENT = st.tuples(st.sampled_from(TYPES), st.integers(0, 12), st.integers(0, 4),
                  st.sampled_from([0.5, 2.0]), st.sampled_from(["x", "y"]))


def patterns(with_skip: bool) -> list[dict]:
    return [{"name": name, **template, **({"after_match": SKIPS[name]} if with_skip else {})}
            for name, (template, _) in sorted(STREAM_TEMPLATES.items())]


def kept_by_reference(arrived) -> tuple[dict, dict[str, int]]:
    """The reference's matches of the patterns with their skips on `arrived`, those kept
    (canonical, sorted, per pattern that keeps any) and the number each skip drops."""
    plain = workload(patterns(False))
    every = reference_matches(plain, arrived)
    want, dropped = {}, {}
    for name, (template, _) in STREAM_TEMPLATES.items():
        found = {}
        for core in (p.name for p in plain.patterns if p.output_name == name):
            for match in every[core]:
                found[canonical({**match, "pattern": name})] = {**match, "pattern": name}
        kept = reference_skip(list(found.values()), SKIPS[name],
                              template.get("partition_by", []))
        dropped[name] = len(found) - len(kept)
        if kept:
            want[name] = sorted(map(canonical, kept))
    return want, dropped


def streamed(wl, arrived, delay: float, cuts: list[int], restart_at: int,
             folder: Path) -> dict:
    """The follow loop's steps over the arrivals cut at `cuts` into micro-batches; after
    micro-batch `restart_at`, the skips' state is saved as JSON and read into new ones."""
    data = job_data(wl, trivial_plan(wl))
    job = job_from_json(data)
    output = StreamOutput(folder / "out", {k: list(v) for k, v in data["types"].items()})
    skips = StreamSkips(data, job, output)
    matcher = StreamMatcher(job, delay, skips, positional_ids=False)  # ids from the file
    bounds = [0, *sorted(set(cuts)), len(arrived)]
    for number, (low, high) in enumerate(pairwise(bounds)):
        path = folder / f"part-{number:04d}.csv"
        write_events(arrived.iloc[low:high], wl, path)
        matcher.add(read_batches([str(path)], **data["reader"]), time.time())
        matcher.advance()
        skips.release(decided_below(matcher))
        if number == restart_at:
            saved = json.loads(json.dumps(skips.state()))
            skips = StreamSkips(data, job, output)
            skips.restore(saved)
            matcher.writer = skips
    matcher.advance(final=True)
    skips.release(float("inf"))
    output.close()
    return read_matches(folder / "out")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=24), delay=st.sampled_from([0.0, 1.0]),
       every=st.integers(2, 5), restart_at=st.integers(0, 4), seed=st.integers(0, 100))
def test_stream_skips_equal_reference(rows, delay, every, restart_at, seed):
    """Micro-batches of `every` arrivals; the skips' state restarted after one of them."""
    cuts = list(range(every, len(rows), every))
    events = frame(sorted(rows, key=lambda r: r[1]))
    arrived = arrivals(events, delay, seed)
    wl = workload(patterns(True), csv=True)
    want, _ = kept_by_reference(arrived)
    with tempfile.TemporaryDirectory() as folder:
        got = streamed(wl, arrived, delay, cuts, restart_at, Path(folder))
    assert got == want


def _one_key(rows: list[tuple], cuts: list[int], restart_at: int, template: dict,
             skip) -> list[tuple]:
    """The ids of the matches a stream of `rows` (type, ts, v) keeps, in micro-batches cut
    at `cuts`, no delay."""
    wl = workload([{"name": "p", **template, "after_match": skip}], csv=True)
    events = frame([(t, ts, v, 0.5, "x") for t, ts, v in rows])
    with tempfile.TemporaryDirectory() as folder:
        got = streamed(wl, events, 0.0, cuts, restart_at, Path(folder))
    return sorted(tuple(i for _, bound in m[1] for _, i in bound) for m in got.get("p", []))


def test_a_match_kept_before_a_restart_skips_one_after_it():
    """A0 B1 A2 | B4: (A0, B1) is kept in the first micro-batch; after the restart (A0, B4)
    starts before its end and is dropped, (A2, B4) kept."""
    template = {"structure": ["SEQ", "a:A", "b:B"], "within": 10}
    rows = [("A", 0, 0), ("B", 1, 0), ("A", 2, 0), ("B", 4, 0)]
    assert _one_key(rows, [3], 0, template, "past_last_event") == [(0, 1), (2, 3)]


def test_a_core_pattern_owned_later_is_waited_for():
    """SEQ(a, NOT x, OPTIONAL c): (A0) alone is owned a window after its event (its NOT
    trails), (A0, C1) at once; (A0) completes first, so past_last_event keeps it and drops
    (A0, C1), as the batch run does, however early (A0, C1) is emitted. (A2) is kept;
    (A9) is held back, the input ending inside its window."""
    template = {"structure": ["SEQ", "a:A", ["NOT", "x:B"], ["OPTIONAL", "c:C"]],
                "within": 3}
    rows = [("A", 0, 0), ("C", 1, 0), ("A", 2, 5), ("A", 9, 5)]
    assert _one_key(rows, [2, 3], 5, template, "past_last_event") == [(0,), (2,)]


def test_follow_stopped_and_restarted_from_its_checkpoint(tmp_path):
    """`cepplan run --follow` with a checkpoint, stopped by SIGTERM after A0 B1 A2 (the
    drain writes what it holds), restarted on B4: the kept (A0, B1) still skips (A0, B4),
    as in the batch run of all four events, each match written once."""
    import signal

    from tests.engine.follow_process import follow_until_recorded
    from tests.in_process import cepplan

    document = {"format": "cepplan.workload/1", "time_unit": "s",
                "source": {"format": "csv", "header": True, "type_column": "kind",
                           "time_column": "ts", "id_column": "id"},
                "event_types": {t: {"attributes": {"k": "string"}} for t in ("A", "B")},
                "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "within": 10,
                              "after_match": "past_last_event"}],
                "statistics": {"rates": {"A": 1, "B": 1}}}
    (tmp_path / "w.json").write_text(json.dumps(document))
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", str(tmp_path / "w.json"), "-o", str(plan), "-q").returncode == 0
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    source.mkdir()

    def drop(name: str, text: str) -> None:
        (source / f".{name}").write_text("id,kind,ts,k\n" + text)
        (source / f".{name}").rename(source / name)

    drop("part-0.csv", "0,A,0,x\n1,B,1,x\n2,A,2,x\n")
    args = ["run", str(plan), "--follow", str(source), "-o", str(out), "--checkpoint",
            str(checkpoint), "-q", "--trigger", "0.02"]
    assert follow_until_recorded(args, checkpoint, signal.SIGTERM) == 0
    drop("part-1.csv", "3,B,4,x\n")
    (source / "_END").touch()
    done = cepplan(*args)
    assert done.returncode == 0, done.stderr
    found = read_matches(out)["p"]
    assert sorted(tuple(i for _, bound in m[1] for _, i in bound) for m in found) == \
        [(0, 1), (2, 3)]
