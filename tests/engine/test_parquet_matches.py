"""`cepplan run --format parquet`: a directory of typed columns per pattern (docs/engine.md,
"Matches as Parquet"), checked field by field against the JSON lines of the same run, parsed
(`parquet_reference`): each variable's event, Kleene lists, complex events, an OR's unbound
variable, the match's first and last timestamps, times as the input wrote them, emitted
attributes (a zero divisor's NaN as null); on the in-process engine's every path (by time
range as read, holding all rows, with contexts)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepplan.sources.time_format import parse_times
from cepplan.sources.time_text import offset_text
from cepplan.workload import load_workload
from tests.engine.parquet_reference import expected_rows, json_matches, parquet_rows
from tests.hostile import conftest as hostile
from tests.hostile import test_output_storage as storage
from tests.hostile.output_project import snapshot

cli = hostile.cli  # the fixture: the real `cepplan` entry point, in-process
tmpfs = storage.tmpfs  # the fixture: a real tmpfs of a given size
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

WORKLOAD = {
    "format": "cepplan.workload/1", "name": "typed", "time_unit": "s",
    "source": {"format": "csv", "header": True, "type_column": "kind", "time_column": "at",
               "time_format": "yyyy-MM-dd HH:mm:ss"},
    "event_types": {
        "A": {"attributes": {"v": "long", "x": "double", "tag": "string", "ok": "bool"}},
        "B": {"attributes": {"v": "long", "x": "double"}},
        "C": {"attributes": {"v": "long", "tag": "string"}}},
    "options": {"kleene_cap": 6},
    "patterns": [
        {"name": "rise", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
         "where": ["a.v < c.v", "b.x < NEXT(b.x)"], "within": 12,
         "emit": {"first_x": "FIRST(b.x)", "span": "c.ts - a.ts", "tag": "a.tag",
                  "ratio": "c.v / (a.v - 3)"}},
        {"name": "either", "structure": ["OR", "a:A", "c:C"], "where": ["a.v > 7", "c.v > 8"]},
        {"name": "quiet", "structure": ["SEQ", "a:A", ["NOT", "n:B"], "c:C"],
         "where": ["a.v <= c.v"], "within": 6},
        {"name": "twice", "structure": ["SEQ", "r:rise", "d:A"],
         "where": ["d.x > r.first_x"], "within": 20}],
    "statistics": {"rates": {"A": 0.4, "B": 0.4, "C": 0.2}}}
START = datetime(2024, 2, 28, 23, 59, 0, tzinfo=UTC).timestamp()


def typed_events(path: Path, rows: int, seed: int) -> dict[float, str]:
    """Random events of A, B and C, a few seconds apart (several at one second), times
    written `yyyy-MM-dd HH:mm:ss` across a leap day; each timestamp's text."""
    rng = random.Random(seed)
    lines, texts, second = ["kind,at,v,x,tag,ok"], {}, 0
    for _ in range(rows):
        second += rng.choice([0, 1, 1, 2, 3])
        text = datetime.fromtimestamp(START + second, UTC).strftime("%Y-%m-%d %H:%M:%S")
        texts[START + second] = text
        lines.append(f"{rng.choice('AABBC')},{text},{rng.randint(0, 12)},"
                     f"{rng.uniform(-5, 5):.3f},{rng.choice(['up', 'dn', 'été'])},"
                     f"{rng.choice(['true', 'false'])}")
    path.write_text("\n".join(lines) + "\n")
    return texts


def run_both(cli, tmp_path: Path, workload: Path, events: Path, *args: str) -> tuple[Path, Path]:
    """The plan's run as JSON lines and as Parquet (same engine, same arguments)."""
    planned = cli("optimize", workload, "-o", tmp_path / "plan.json", "-q")
    assert planned.code == 0, planned.err
    outs = []
    for form in ("jsonl", "parquet"):
        out = tmp_path / form
        ran = cli("run", tmp_path / "plan.json", events, "-o", out, "--format", form, "-q",
                  *args)
        assert ran.code == 0, ran.err
        outs.append(out)
    return outs[0], outs[1]


# a pattern over the matches of `rise` bound to a Kleene variable: lists of complex events
KLEENE_OF_MATCHES = {"name": "twice", "structure": ["SEQ", ["KLEENE", "r:rise"], "d:A"],
                     "where": ["d.x > 0"], "within": 8, "emit": {"n": "LAST(r.first_x)"}}


@pytest.mark.parametrize("hierarchy", ["none", "complex event", "Kleene of complex events"])
def test_typed_columns_equal_the_json_lines(cli, tmp_path, hierarchy):
    """Every column of every pattern's Parquet equals the JSON lines' value; each time
    column holds the input's own text. Without a pattern over another's matches the engine
    matches by time range as it reads; with one it holds all rows."""
    raw = json.loads(json.dumps(WORKLOAD))
    if hierarchy == "none":
        raw["patterns"] = [p for p in raw["patterns"] if p["name"] != "twice"]
    elif hierarchy.startswith("Kleene"):
        raw["patterns"][-1] = KLEENE_OF_MATCHES
    (tmp_path / "w.json").write_text(json.dumps(raw))
    texts = typed_events(tmp_path / "e.csv", 600, seed=3)
    jsonl, parquet = run_both(cli, tmp_path, tmp_path / "w.json", tmp_path / "e.csv")
    workload = load_workload(tmp_path / "w.json")
    matches = json_matches(jsonl)
    assert {p: len(m) for p, m in matches.items()} == json.loads(
        (parquet / "metrics.json").read_text())["matches"]
    assert all(len(matches.get(p.name, [])) > 5 for p in workload.patterns), matches.keys()
    assert parquet_rows(parquet, workload) == expected_rows(workload, matches, texts)
    schema = pq.read_schema(next((parquet / "matches" / "pattern=rise").glob("*.parquet")))
    assert schema.field("b.x").type.value_type == pa.float64()
    assert schema.field("b.id").type.value_type == pa.int64()
    assert (schema.field("a.v").type, schema.field("a.ok").type) == (pa.int64(), pa.bool_())
    assert (schema.field("ratio").type, schema.field("tag").type) == (pa.float64(), pa.string())
    assert schema.names[:4] == ["first_ts", "last_ts", "first_time", "last_time"]
    if hierarchy.startswith("Kleene"):
        schema = pq.read_schema(next((parquet / "matches" / "pattern=twice").glob("*.parquet")))
        assert schema.field("r.first_x").type == pa.list_(pa.float64())
        assert schema.field("r.match").type == pa.list_(pa.string())


def test_iso_times_with_a_zone_are_written_as_read(cli, tmp_path):
    """ISO times with milliseconds and a `Z` zone (`...SSSXXX`): each time column holds the
    input's own text."""
    raw = json.loads(json.dumps(WORKLOAD))
    raw["source"]["time_format"] = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
    raw["patterns"] = raw["patterns"][:1]
    (tmp_path / "w.json").write_text(json.dumps(raw))
    texts = typed_events(tmp_path / "e.csv", 300, seed=4)
    iso = {stamp: text.replace(" ", "T") + ".000Z" for stamp, text in texts.items()}
    lines = (tmp_path / "e.csv").read_text().splitlines()
    (tmp_path / "e.csv").write_text("\n".join(
        [lines[0], *(",".join([f[0], f[1].replace(" ", "T") + ".000Z", *f[2:]])
                     for f in (line.split(",") for line in lines[1:]))]) + "\n")
    jsonl, parquet = run_both(cli, tmp_path, tmp_path / "w.json", tmp_path / "e.csv")
    workload = load_workload(tmp_path / "w.json")
    rows = parquet_rows(parquet, workload)
    assert rows == expected_rows(workload, json_matches(jsonl), iso) and rows["rise"]
    assert rows["rise"][0]["first_time"].endswith(".000Z")


OFFSETS = [3600, 7200, -19800, 0, 20700]  # +01:00, +02:00 (summer time), -05:30, Z, +05:45


def zoned_events(path: Path, rows: int, seed: int, letters: str) -> dict[float, str]:
    """`typed_events` with ISO times each written in its own zone offset (several per file,
    as across a change to summer time), spelled as Java writes `letters`; each timestamp's
    text (every event of one timestamp is written in one offset)."""
    texts = typed_events(path, rows, seed)
    spelled: dict[float, str] = {}
    lines = path.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        fields = line.split(",")
        stamp = datetime.strptime(fields[1], "%Y-%m-%d %H:%M:%S").replace(
            tzinfo=UTC).timestamp()
        offset = OFFSETS[int(stamp) % len(OFFSETS)]
        local = datetime.fromtimestamp(stamp + offset, UTC)
        spelled[stamp] = f"{local:%Y-%m-%dT%H:%M:%S}.{local.microsecond // 1000:03d}" + \
            offset_text(letters, offset)
        out.append(",".join([fields[0], spelled[stamp], *fields[2:]]))
    path.write_text("\n".join(out) + "\n")
    assert set(spelled) == set(texts)
    return spelled


@pytest.mark.parametrize("letters", ["XXX", "xx", "X"])
def test_times_come_back_in_the_offset_the_input_wrote(cli, tmp_path, letters):
    """Times written with zone offsets that change within the file (`+01:00`, `+02:00`,
    `-05:30`, `Z`, `+05:45`): each time column holds the event's own text, its own offset
    (formerly every time in UTC, `Z`), on the paths matching as read and holding all rows."""
    raw = json.loads(json.dumps(WORKLOAD))
    raw["source"]["time_format"] = f"yyyy-MM-dd'T'HH:mm:ss.SSS{letters}"
    (tmp_path / "w.json").write_text(json.dumps(raw))
    texts = zoned_events(tmp_path / "e.csv", 500, 6, letters)
    jsonl, parquet = run_both(cli, tmp_path, tmp_path / "w.json", tmp_path / "e.csv")
    workload = load_workload(tmp_path / "w.json")
    rows = parquet_rows(parquet, workload)
    assert rows == expected_rows(workload, json_matches(jsonl), texts)
    written = {r["first_time"][23:] for r in rows["rise"]}
    assert len(written) > 2 and written <= {offset_text(letters, o) for o in OFFSETS}


@pytest.mark.parametrize(("letters", "seconds", "text"), [
    ("X", 0, "Z"), ("X", 3600, "+01"), ("X", 5400, "+0130"), ("XX", -3600, "-0100"),
    ("XXX", 20700, "+05:45"), ("XXXX", 3615, "+010015"), ("XXXXX", -3615, "-01:00:15"),
    ("XXXXX", 0, "Z"), ("x", 0, "+00"), ("xx", 0, "+0000"), ("xxx", 0, "+00:00"),
    ("Z", 0, "+0000"), ("ZZZ", -19800, "-0530"), ("ZZZZZ", 0, "Z")])
def test_offsets_are_spelled_as_java_writes_them(letters, seconds, text):
    """Java's DateTimeFormatter, formatting an offset (its documentation's table), and what
    the reader reads back: the same offset."""
    assert offset_text(letters, seconds) == text
    assert parse_times([f"2024-01-01T00:00:00{text}"], f"yyyy-MM-dd'T'HH:mm:ss{letters}",
                       "s")[0] == datetime(2024, 1, 1, tzinfo=UTC).timestamp() - seconds


def test_contexts_and_numeric_times(cli, tmp_path):
    """The traffic example (contexts: the deriving patterns' matches and those the context
    stage keeps exist only as text) and numeric timestamps (no time columns)."""
    folder = tmp_path / "traffic"
    shutil.copytree(EXAMPLES / "traffic", folder)
    jsonl, parquet = run_both(cli, tmp_path, folder / "workload.json", folder / "events.csv")
    workload = load_workload(folder / "workload.json")
    matches = json_matches(jsonl)
    assert sum(map(len, matches.values())) > 50
    assert parquet_rows(parquet, workload) == expected_rows(workload, matches, None)


def test_a_pattern_without_matches_still_has_its_columns(cli, tmp_path):
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    (tmp_path / "e.csv").write_text("kind,at,v,x,tag,ok\nB,2024-01-01 00:00:00,1,2.0,,\n")
    _, parquet = run_both(cli, tmp_path, tmp_path / "w.json", tmp_path / "e.csv")
    for name in ("rise", "either", "quiet", "twice"):
        table = pq.read_table(parquet / "matches" / f"pattern={name}")
        assert table.num_rows == 0 and "first_ts" in table.column_names


@pytest.mark.parametrize("follow", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize("clash", [("event_types", "A", "time"), ("emit", "rise", "last_ts")])
def test_a_column_named_twice_is_refused(cli, tmp_path, clash, follow):
    """An attribute named as a column the layout adds: one error line naming the pattern
    and both columns, before anything runs (a live stream's Parquet parts too)."""
    raw = json.loads(json.dumps(WORKLOAD))
    where, owner, name = clash
    if where == "event_types":
        raw["event_types"][owner]["attributes"][name] = "long"
    else:
        raw["patterns"][0]["emit"][name] = "c.ts"
    (tmp_path / "w.json").write_text(json.dumps(raw))
    typed_events(tmp_path / "e.csv", 50, seed=1)
    assert cli("optimize", tmp_path / "w.json", "-o", tmp_path / "p.json", "-q").code == 0
    (tmp_path / "in").mkdir()
    events = ("--follow", tmp_path / "in") if follow else (tmp_path / "e.csv",)
    failed = cli("run", tmp_path / "p.json", *events, "-o", tmp_path / "out",
                 "--format", "parquet")
    failed.one_error("w.json: patterns[", f"two columns 'a.{name}'" if where == "event_types"
                     else f"two columns '{name}'", "rename")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("problem", ["full", "read-only"])
def test_a_file_system_refusing_the_parquet_keeps_the_earlier_output(cli, tmp_path, tmpfs,
                                                                      problem):
    """A full disk or a read-only file system while the parts are written: one line naming
    the problem, the earlier output as it was, no staging directory left."""
    point = tmpfs("1m")
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    typed_events(tmp_path / "e.csv", 600, seed=3)
    assert cli("optimize", tmp_path / "w.json", "-o", tmp_path / "p.json", "-q").code == 0
    run = ("run", tmp_path / "p.json", tmp_path / "e.csv", "-o", point / "out", "--format",
           "parquet", "-q")
    assert cli(*run).code == 0
    if problem == "full":
        storage._fill(point)
    else:
        subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    before = snapshot(point)
    cli(*run).one_error("no space left on device" if problem == "full" else
                        "read-only file system")
    assert snapshot(point) == before
