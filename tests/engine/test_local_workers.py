"""`cepplan run --workers N`: the in-process engine's time ranges matched in N worker
processes give the very files (byte for byte) one worker gives, and the brute-force
reference's matches; paths without time ranges say they ran on one worker; a worker's error
reaches the user as it would from one worker, the output left as it was."""

from __future__ import annotations

import gzip
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import byte_ranges, engine, range_cut, workers
from cepplan.engine_adapter.local.source import read_batches
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.memory import MEMORY_VARIABLE, MatchMemoryError
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.errors import InputError
from cepplan.planner.plan import trivial_plan
from cepplan.sources import text_input
from cepplan.sources.csv_ranges import line_regions
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import load_workload
from cepplan.workload.columns import EVENT_ID, EVENT_TS
from cepplan.workload.model import Workload
from tests.engine.example_data import (
    EXAMPLES,
    STOCKS_REFERENCE,
    example_reference,
    stepwise_plan,
    thin_example,
)
from tests.engine.reference_matcher import canonical, reference_matches
from tests.engine.test_local_engine import SAME, read_matches
from tests.engine.test_shared_plan import EXAMPLE as TRADING
from tests.engine.test_shared_time_ranges import (
    _chosen,
    random_events,
    random_workload,
    trading_events,
)
from tests.hostile import test_output_storage as storage

pytestmark = STOCKS_REFERENCE
tmpfs = storage.tmpfs  # the fixture: a real tmpfs of a given size


def _run(data: dict, events: list[str], out: Path, workers: int, *, fmt: str = "jsonl",
         said: list[str] | None = None) -> dict:
    """One run with ranges of a few dozen tagged rows (many of them: the parent cuts them,
    the workers match them with their own defaults)."""
    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(engine, "read_batches", partial(read_batches, batch_bytes=1024))
        patch.setattr(engine, "REGION_ROWS", 40)
        patch.setattr(byte_ranges, "CHUNK_BYTES", 2048)
        patch.setattr(range_cut, "MIN_RANGE_BYTES", 1)
        patch.setattr(byte_ranges, "FIRST_MARGIN_BYTES", 512)
        return engine.run_local_job(data, events, out, output_format=fmt, workers=workers,
                                    say=(lambda _text: None) if said is None else said.append)
    finally:
        patch.undo()


def _files(out: Path) -> dict[str, object]:
    """What OUT/matches/ and OUT/timed_out/ hold as a reader takes it: per folder, its part
    files concatenated in name order (JSON lines: their bytes; Parquet: each pattern's rows,
    as one table)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    held: dict[str, list[Path]] = {}
    for folder in (out / "matches", out / "timed_out"):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
            if path.is_file() and not path.name.startswith((".", "_")):
                held.setdefault(str(path.parent.relative_to(out)), []).append(path)
    return {place: (b"".join(p.read_bytes() for p in paths) if paths[0].suffix == ".jsonl"
                    else pa.concat_tables(pq.read_table(p) for p in paths))
            for place, paths in held.items()}


def _parts(out: Path) -> list[str]:
    """The names of the JSON lines parts under OUT/matches/, in name order."""
    return sorted(p.name for p in (out / "matches").glob("part-*.jsonl"))


def _same_runs(data: dict, events: list[str], tmp: Path, counts: tuple[int, ...],
               fmt: str = "jsonl") -> dict:
    """Runs with each number of workers: the same matches in the same order as one
    worker's (its parts concatenated in name order), the same counts; the one-worker run's
    metrics."""
    one = _run(data, events, tmp / "w1", 1, fmt=fmt)
    assert one["workers"] == 1
    for count in counts:
        many = _run(data, events, tmp / f"w{count}", count, fmt=fmt)
        assert many["workers"] == count
        assert _files(tmp / f"w{count}") == _files(tmp / "w1"), count
        for key in (*SAME, "negation_held_back", "partial_matches", "shared_nodes"):
            assert many.get(key) == one.get(key), (count, key)
    return one


def test_workers_give_the_same_files_and_the_reference_matches(tmp_path):
    """Stocks (negation, Kleene, AND, a key): the trivial plan on 2 and 3 workers, a
    many-step plan on 2: the files of one worker, the reference's matches."""
    workload, events, expected = example_reference("stocks", seed=5, duration=360,
                                                   total_rate=1.0)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    assert sum(map(len, expected.values())) > 0
    for kind, plan, counts in (("trivial", trivial_plan(workload), (2, 3)),
                               ("steps", stepwise_plan(workload), (2,))):
        _same_runs(job_data(workload, plan), [str(path)], tmp_path / kind, counts)
        got = read_matches(tmp_path / kind / "w1")
        assert {k: got.get(k, []) for k in expected} == expected, kind


def test_each_worker_writes_its_own_part(tmp_path):
    """One CSV file on 3 workers: each byte range's matches are a part of their own, named
    in range order (renamed into the output, no spill left); on one worker, the one part."""
    workload, events, _ = example_reference("stocks", seed=5, duration=360, total_rate=1.0)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    data = job_data(workload, trivial_plan(workload))
    _run(data, [str(path)], tmp_path / "w1", 1)
    assert _parts(tmp_path / "w1") == ["part-00000.jsonl"]
    metrics = _run(data, [str(path)], tmp_path / "w3", 3)
    assert metrics["reading"] == "by byte range in each worker"
    assert _parts(tmp_path / "w3") == ["part-00000.jsonl", "part-00001.jsonl",
                                       "part-00002.jsonl"]
    assert list(tmp_path.glob("**/spill")) == []


def test_workers_write_the_same_parquet_files(tmp_path):
    """Typed Parquet parts: the same bytes on 2 workers as on one."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    one = _same_runs(job_data(workload, trivial_plan(workload)),
                     [str(EXAMPLES / "fraud" / "events.csv")], tmp_path, (2,), fmt="parquet")
    assert sum(one["matches"].values()) > 0


def test_range_output_past_a_workers_memory_comes_back_whole(tmp_path, monkeypatch):
    """Input read by the parent (compressed: not read by byte range): a worker holds a
    range's output up to a limit and spills the rest to a file: with a limit of 200 bytes,
    the JSON lines and the Parquet parts are still one worker's bytes."""
    monkeypatch.setattr(workers.RangeOutput, "HELD_BYTES", 200)
    spilled: list[str] = []
    append = workers.append_spill

    def counted(writer, spill, output_format):
        spilled.append(output_format)
        append(writer, spill, output_format)

    monkeypatch.setattr(workers, "append_spill", counted)
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    data = job_data(workload, trivial_plan(workload))
    events = [str(tmp_path / "events.csv.gz")]
    Path(events[0]).write_bytes(gzip.compress((EXAMPLES / "fraud" / "events.csv").read_bytes()))
    for fmt in ("jsonl", "parquet"):
        one = _same_runs(data, events, tmp_path / fmt, (2,), fmt=fmt)
        assert sum(one["matches"].values()) > 10, fmt
        assert one["reading"] == "by this process: the input is not one plain CSV file"
        assert fmt in spilled
    assert list(tmp_path.glob("**/spill")) == []


def test_shared_plan_on_workers(tmp_path):
    """The trading rules' shared plan: the same files and shared-node counts on 2 workers."""
    path = trading_events(40, tmp_path / "events.csv")
    one = _same_runs(_chosen(load_workload(TRADING / "workload.json")), [str(path)],
                     tmp_path, (2,))
    assert one["shared_nodes"] and sum(one["matches"].values()) > 500


@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_random_streams_on_workers_match_the_reference(tmp_path_factory, seed):
    """Random many-pattern workloads and streams (shared plans where the search shares):
    on 2 workers, the one-worker files and the reference's matches."""
    tmp = tmp_path_factory.mktemp("random")
    wl = random_workload(seed)
    events = random_events(seed, 240, 90.0, tmp / "events.csv")
    _same_runs(_chosen(wl), [str(tmp / "events.csv")], tmp, (2,))
    expected = {p: sorted(map(canonical, m)) for p, m in reference_matches(wl, events).items()}
    got = read_matches(tmp / "w1")
    assert {p: got.get(p, []) for p in expected} == expected


def _ids(match: tuple) -> list[int]:
    """The row ids a canonical match binds (a complex subevent's too)."""
    found = []
    for _var, items in match[1]:
        for item in items:
            found += _ids(item) if isinstance(item[1], tuple) else [item[1]]
    return found


def _across_cuts(tmp: Path, seed: int, count: int) -> tuple[Workload, Path, dict, list]:
    """A random workload and stream in `tmp`, its reference matches, and those of them whose
    events lie on both sides of a cut of the file into `count` byte ranges."""
    workload = random_workload(seed)
    path = tmp / "events.csv"
    events = random_events(seed, 240, 90.0, path)
    expected = {p: sorted(map(canonical, m))
                for p, m in reference_matches(workload, events).items()}
    size = path.stat().st_size
    found = line_regions(str(path), (), True, [size * i // count for i in range(count)])
    cuts = [region.before for region in found[1:]]  # the first row of each later range
    across = [m for matches in expected.values() for m in matches
              if any(min(_ids(m)) < cut <= max(_ids(m)) for cut in cuts)]
    return workload, path, expected, across


def _cut_and_compared(tmp: Path, seed: int, count: int) -> list:
    """The stream of `seed` matched in `count` byte ranges, each read by its own process:
    the matches are the reference's and the files one worker's byte for byte; those that
    cross a cut."""
    workload, path, expected, across = _across_cuts(tmp, seed, count)
    one = _same_runs(_chosen(workload), [str(path)], tmp, (count,))
    assert one["reading"] == "by byte range in each worker"
    got = read_matches(tmp / f"w{count}")
    assert {k: got.get(k, []) for k in expected} == expected
    return across


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), count=st.integers(2, 4))
def test_random_streams_cut_into_byte_ranges_give_the_reference_matches(tmp_path_factory,
                                                                        seed, count):
    """Random workloads and streams, the file cut into 2 to 4 byte ranges."""
    _cut_and_compared(tmp_path_factory.mktemp("cut"), seed, count)


def test_matches_across_a_byte_range_boundary(tmp_path):
    """Matches whose events lie on both sides of a cut (found from the rows before each
    range) are there: the first seed whose stream has some, cut in two. (A random stream
    need not have one: the property test above cannot promise it.)"""
    for seed in range(50):
        probe = tmp_path / f"probe-{seed}"
        probe.mkdir()
        if _across_cuts(probe, seed, 2)[3]:
            break
    else:
        raise AssertionError("no stream of the first 50 seeds has a match across a cut")
    assert _cut_and_compared(tmp_path, seed, 2)


def test_events_out_of_time_order_are_read_by_this_process_and_say_so(tmp_path):
    """Fraud events with rows late by 200 lines in the second byte range: on 2 workers the
    run falls back to reading everything first, says why in metrics.json, and writes the
    files of one worker."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    lines = (EXAMPLES / "fraud" / "events.csv").read_text().splitlines(True)
    body = lines[1:]
    path = tmp_path / "late.csv"
    path.write_text(lines[0] + "".join(body[:5000] + body[5200:] + body[5000:5200]))
    data = job_data(workload, trivial_plan(workload))
    one = _run(data, [str(path)], tmp_path / "w1", 1)
    said: list[str] = []
    two = _run(data, [str(path)], tmp_path / "w2", 2, said=said)
    assert two["reading"] == one["reading"] == "by this process: the events are not in time order"
    assert any("not in time order" in line for line in said)
    assert _files(tmp_path / "w2") == _files(tmp_path / "w1")
    assert sum(two["matches"].values()) > 0


def test_blank_lines_and_a_long_line_are_read_by_this_process(tmp_path, monkeypatch):
    """Blank lines in a later byte range (its row ids cannot be counted ahead): on 2 workers
    the file is read as one range by this process, the files of one worker, said why; a line
    past the reader's limit there: the reader's error naming its line, as with one worker."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    lines = (EXAMPLES / "fraud" / "events.csv").read_text().splitlines(True)
    path = tmp_path / "blank.csv"
    path.write_text("".join([*lines[:6000], "\n", *lines[6000:]]))
    data = job_data(workload, trivial_plan(workload))
    one = _run(data, [str(path)], tmp_path / "w1", 1)
    two = _run(data, [str(path)], tmp_path / "w2", 2)
    assert two["reading"] == "by this process: the CSV file has blank lines"
    assert two["workers"] == 1 and one["reading"] == "by byte range in each worker"
    assert _files(tmp_path / "w2") == _files(tmp_path / "w1")
    monkeypatch.setattr(byte_ranges, "MAX_LINE_BYTES", 3000)
    monkeypatch.setattr(text_input, "MAX_LINE_BYTES", 3000)
    path.write_text("".join([*lines[:1000], "x" * 5000 + "\n", *lines[1000:]]))
    for count in (1, 2):  # in the first range, which this process reads (and patched)
        with pytest.raises(InputError, match="line 1001 is longer"):
            _run(data, [str(path)], tmp_path / f"long{count}", count)


def test_hierarchy_and_contexts_run_on_one_worker_and_say_so(tmp_path):
    """A pattern reading another's matches needs them all, contexts their windows: one
    worker, said and counted in metrics.json."""
    workload, events = thin_example("network")
    path = tmp_path / f"events.{workload.source.format}"
    write_events(events, workload, path)
    traffic = load_workload(EXAMPLES / "traffic" / "workload.json")
    for name, data, files, why in (
            ("network", job_data(workload, trivial_plan(workload)), [str(path)],
             "a pattern reads another pattern's matches"),
            ("traffic", job_data(traffic, trivial_plan(traffic)),
             [str(EXAMPLES / "traffic" / "events.csv")], "the plan has contexts")):
        said: list[str] = []
        metrics = _run(data, files, tmp_path / name, 2, said=said)
        assert metrics["workers"] == 1, name
        assert f"matching with one worker: {why}" in said, name


def test_a_workers_error_is_the_error_of_one_worker(tmp_path, monkeypatch):
    """A memory budget too small for a range: the same error as on one worker, from the
    worker process, and the earlier output left as it was."""
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    events = synthesize(workload, seed=5, truth_draws=1000, duration=360,
                        total_rate=1.0).events
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    data = job_data(workload, trivial_plan(workload))
    monkeypatch.setenv(MEMORY_VARIABLE, "1M")  # less than any process holds
    messages = []
    for count in (1, 2):
        out = tmp_path / f"w{count}"
        (out / "matches").mkdir(parents=True)
        (out / "metrics.json").write_text("{}")
        with pytest.raises(MatchMemoryError) as stopped:
            _run(data, [str(path)], out, count)
        messages.append(str(stopped.value).split(";")[0])
        assert sorted(p.name for p in out.iterdir()) == ["matches", "metrics.json"]
        assert (out / "metrics.json").read_text() == "{}"
    # the pattern and its window alike; the figures differ (each worker has a share)
    assert messages[0].split(": the ")[0] == messages[1].split(": the ")[0]
    assert "within its window" in messages[0]


def test_the_margin_before_a_byte_range_is_read_once(tmp_path, monkeypatch):
    """A range's reader looks back for a margin wider than everything before it (guessing
    64 bytes, doubling): each line before the range is parsed once, and the rows are those
    the one-range reader reads there, with their ids (each doubling re-read the lines the
    last one had read: about twice the bytes)."""
    workload, events, _expected = example_reference("stocks", seed=5, duration=360,
                                                    total_rate=1.0)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    data = job_data(workload, trivial_plan(workload))
    job = job_from_json(data)
    file = byte_ranges.file_input(job, data, [str(path)], 40)
    file = replace(file, margin=float("inf"))  # every line before the range is needed
    region = byte_ranges._regions(file, data, 2)[1]
    parsed: list[int] = []

    def counted(*args, text: bytes, **kwargs):
        parsed.append(len(text))
        return read_batches(*args, text=text, **kwargs)

    monkeypatch.setattr(byte_ranges, "FIRST_MARGIN_BYTES", 64)
    monkeypatch.setattr(byte_ranges, "read_batches", counted)
    rows = byte_ranges.RangeReader(job, data, file).back(region, 0.0)
    assert sum(parsed) == region.start - region.data_start
    whole = byte_ranges.RangeReader(job, data, file)
    before = Columns.concat(list(whole.chunks(region.data_start, region.start, 0)),
                            [EVENT_TS, EVENT_ID])
    assert len(rows) > 0
    for name in (EVENT_TS, EVENT_ID):
        assert list(rows[name]) == list(before[name]), name


def test_a_worker_on_a_full_disk_says_so_without_a_traceback(tmp_path, tmpfs, capfd):
    """A byte-range worker whose part fills the disk (a real tmpfs) removes its part, so that
    its outcome, the error, fits (the parent then says it in one line): no traceback of its
    own on stderr, no part left."""
    import errno
    import json
    import multiprocessing
    import os
    import pickle

    workload, events, _ = example_reference("stocks", seed=5, duration=360, total_rate=1.0)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    data = job_data(workload, trivial_plan(workload))
    job = job_from_json(data)
    file = byte_ranges.file_input(job, data, [str(path)], 40)
    region = byte_ranges._regions(file, data, 2)[1]
    mount = tmpfs("64k")
    job_file = mount / "job.json"
    job_file.write_text(json.dumps(data))
    filler = mount / "filler"
    filler.write_bytes(b"\0" * ((60 << 10) - job_file.stat().st_size - 4096))
    parts, outcome = mount / "range-00001", mount / "range-00001.outcome"
    process = multiprocessing.get_context("spawn").Process(
        target=byte_ranges.serve_region,
        args=(str(job_file), region, file, "jsonl", 1 << 30, str(parts), str(outcome),
              os.getpid()))
    process.start()
    process.join(120)
    assert "Traceback" not in capfd.readouterr().err
    kind, error = pickle.loads(outcome.read_bytes())
    assert (kind, error.errno) == ("error", errno.ENOSPC)
    assert not parts.exists()
