"""Hostile and malformed event files through the in-process engines (`stats`, `run`,
`compare --events`, `cover`): each is read as the workload's `source` says, or refused with
one clear error naming the file — never a traceback, never a silent wrong answer."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.planner.plan import trivial_plan
from cepplan.workload import build_workload, load_workload
from tests.engine.reference_matcher import canonical, reference_matches
from tests.hostile.conftest import EXAMPLES, ROOT

FRAUD = EXAMPLES / "fraud"


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    """The fraud example's first 300 events."""
    return pd.read_csv(FRAUD / "events.csv").head(300)


def _stats(cli, events, workload):
    return cli("stats", events, "-w", workload, "-o", workload.parent / "stats.json", "-q")


def test_stats_on_four_rows_without_a_patterns_types(cli, fraud, rows):
    """Four valid Swipe rows: the patterns over other types have no sample to estimate from,
    and say so instead of failing inside pandas."""
    rows[rows["event"] == "Swipe"].head(4).to_csv(fraud / "four.csv", index=False)
    result = _stats(cli, fraud / "four.csv", fraud / "workload.json")
    assert result.code == 0, result.err
    document = json.loads((fraud / "stats.json").read_text())
    assert document["rows"]["valid"] == 4 and list(document["rates"]) == ["Swipe"]
    assert document["selectivities"]["account_takeover"] == {}


def test_an_attribute_unparsable_in_two_schemas_is_one_reason(cli, fraud, rows):
    """`amount` belongs to Swipe and Withdrawal, whose attribute sets differ: a bad amount
    in each is one reason counted twice (it was two equal reasons, and pandas refused)."""
    bad = rows.astype({"amount": object})
    bad.loc[bad.index[bad["event"] == "Swipe"][0], "amount"] = "lots"
    bad.loc[bad.index[bad["event"] == "Withdrawal"][0], "amount"] = "many"
    bad.to_csv(fraud / "events.csv", index=False)
    result = _stats(cli, fraud / "events.csv", fraud / "workload.json")
    assert result.code == 0, result.err
    assert json.loads((fraud / "stats.json").read_text())["rows"]["reasons"] == {
        "unparsable attribute 'amount'": 2}


def test_json_numbers_that_are_sometimes_true_or_an_object(cli, fraud, rows):
    """JSON lines whose `amount` (a long here, in two schemas) is `true` in one row and an
    object in another: each an unparsable row, counted (it was a pandas traceback)."""
    doc = json.loads((fraud / "workload.json").read_text())
    for name in ("Swipe", "Withdrawal"):
        doc["event_types"][name]["attributes"]["amount"] = "long"
    (fraud / "workload.json").write_text(json.dumps(doc))
    records = json.loads(rows.assign(amount=rows["amount"].round().astype("Int64")).to_json(
        orient="records"))
    swipe = next(r for r in records if r["event"] == "Swipe")
    withdrawal = next(r for r in records if r["event"] == "Withdrawal")
    swipe["amount"], withdrawal["amount"] = True, {"value": 3}
    (fraud / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = _stats(cli, fraud / "events.jsonl", _as(fraud, "jsonl"))
    assert result.code == 0, result.err
    assert _counts(fraud)["reasons"] == {"unparsable attribute 'amount'": 2}


# ---- files that are not what the source says ----

def _as(fraud, fmt: str):
    """The fraud workload reading `fmt` (csv, parquet, jsonl) files."""
    doc = json.loads((fraud / "workload.json").read_text())
    doc["source"]["format"] = fmt
    if fmt != "csv":
        doc["source"].pop("header")
    path = fraud / f"workload_{fmt}.json"
    path.write_text(json.dumps(doc))
    return path


def _cepplan(*args) -> subprocess.CompletedProcess:
    """`cepplan ARGS` in a child process: a reader that aborts the process (pyarrow did)
    fails the case instead of the suite."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "cepplan", *map(str, args)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


NESTED = {"struct": pa.array([{"v": 1.0}] * 300), "list": pa.array([[1.0]] * 300),
          "map": pa.array([[("v", 1.0)]] * 300, pa.map_(pa.string(), pa.float64()))}


@pytest.mark.parametrize("column", ["amount", "user"])
@pytest.mark.parametrize("kind", list(NESTED))
def test_nested_parquet_column_is_refused(cli, fraud, rows, kind, column):
    table = pa.Table.from_pandas(rows, preserve_index=False)
    table = table.set_column(table.schema.get_field_index(column), column, NESTED[kind])
    pq.write_table(table, fraud / "events.parquet")
    _stats(cli, fraud / "events.parquet", _as(fraud, "parquet")).one_error(
        "events.parquet", f"column {column!r} holds nested values", "plain column")


@pytest.mark.parametrize("values", [lambda r: r["amount"].fillna(0) > 500,
                                   lambda r: pd.Timestamp("2024-01-01")])
def test_parquet_amount_of_another_kind_is_refused_as_spark_does(cli, fraud, rows, values):
    """true/false read as 1.0/0.0 was silent; a time read as text made every row unparsable
    (Spark refuses both: test_events.py)."""
    rows.assign(amount=values(rows)).to_parquet(fraud / "events.parquet")
    _stats(cli, fraud / "events.parquet", _as(fraud, "parquet")).one_error(
        "events.parquet", "column 'amount' holds", "but the workload says double")


def test_directory_mixing_csv_parquet_and_text(fraud, rows):
    folder = fraud / "mixed"
    folder.mkdir()
    rows.to_csv(folder / "a.csv", index=False)
    rows.to_parquet(folder / "b.parquet")
    (folder / "c.txt").write_text("notes about the data\n")
    result = _cepplan("stats", folder, "-w", fraud / "workload.json", "-o",
                      fraud / "stats.json", "-q")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"error: {folder / 'b.parquet'}: is a Parquet file, but the workload's "
        "source.format is 'csv'"]


def test_bytes_that_are_not_utf8_in_a_malformed_row(fraud, rows):
    """A Windows-1252 'é' in a row with a field too many aborted the process inside pyarrow;
    it is read as Spark reads it (U+FFFD), the row malformed."""
    text = rows.to_csv(index=False).encode()
    lines = text.splitlines()
    lines[5] += ",caf\xe9".encode("cp1252")
    (fraud / "events.csv").write_bytes(b"\n".join(lines) + b"\n")
    result = _cepplan("stats", fraud / "events.csv", "-w", fraud / "workload.json", "-o",
                      fraud / "stats.json", "-q")
    assert result.returncode == 0, result.stderr
    assert json.loads((fraud / "stats.json").read_text())["rows"]["reasons"] == {
        "malformed row": 1}


@pytest.mark.parametrize("header", ["event,ts,user,device,country,amount,merchant,amount",
                                    "event,ts,user,device,country,amount,merchant,Amount"])
def test_a_column_named_twice_is_refused(cli, fraud, rows, header):
    """The in-process reader took the first `amount`, Spark renamed both: refused in both."""
    body = rows.to_csv(index=False, header=False).splitlines()
    (fraud / "events.csv").write_text("\n".join([header, *(line + ",1" for line in body)]))
    _stats(cli, fraud / "events.csv", fraud / "workload.json").one_error(
        "events.csv", "the input names column 'amount' 2 times", "(column 6)", "(column 8)")


def test_a_parquet_column_named_twice_is_refused(cli, fraud, rows):
    table = pa.Table.from_pandas(rows, preserve_index=False)
    table = table.append_column("amount", pa.array([1.0] * len(rows)))
    pq.write_table(table, fraud / "events.parquet")
    _stats(cli, fraud / "events.parquet", _as(fraud, "parquet")).one_error(
        "events.parquet", "names column 'amount' 2 times")


def _counts(fraud) -> dict:
    return json.loads((fraud / "stats.json").read_text())["rows"]


def test_byte_order_mark_is_skipped(cli, fraud, rows):
    """Excel writes CSV with a UTF-8 byte order mark; the first column was '\\ufeffevent'."""
    (fraud / "bom.csv").write_bytes(b"\xef\xbb\xbf" + rows.to_csv(index=False).encode())
    result = _stats(cli, fraud / "bom.csv", fraud / "workload.json")
    assert result.code == 0, result.err
    assert _counts(fraud)["valid"] == len(rows)


COMPRESS = {".gz": lambda data: gzip.compress(data), ".bz2": lambda data: bz2.compress(data),
            ".zst": lambda data: _zstd(data)}


def _zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as stream:
        stream.write(data)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("ending", list(COMPRESS))
def test_compressed_csv_is_read_by_its_name(cli, fraud, rows, ending):
    data = rows.to_csv(index=False).encode()
    (fraud / f"events.csv{ending}").write_bytes(COMPRESS[ending](data))
    result = _stats(cli, fraud / f"events.csv{ending}", fraud / "workload.json")
    assert result.code == 0, result.err
    assert _counts(fraud)["valid"] == len(rows)


@pytest.mark.parametrize("name,content,problem", [
    ("events.csv", ".gz", "is gzip-compressed, but its name does not end .gz"),
    ("events.csv.gz", None, "its name ends .gz, but it is not gzip-compressed"),
    ("events.csv.bz2", ".gz", "(it is gzip-compressed)"),
    ("events.csv.lz4", "lz4", "is lz4-compressed: decompress it"),
    ("events.csv", "utf-16", "is UTF-16 text"),
])
def test_compression_the_name_does_not_announce(cli, fraud, rows, name, content, problem):
    data = rows.to_csv(index=False)
    if content == "lz4":
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "lz4") as stream:
            stream.write(data.encode())
        raw = sink.getvalue().to_pybytes()
    elif content == "utf-16":
        raw = data.encode("utf-16")
    else:
        raw = COMPRESS[content](data.encode()) if content else data.encode()
    (fraud / name).write_bytes(raw)
    _stats(cli, fraud / name, fraud / "workload.json").one_error(name, problem)


def test_a_two_mebibyte_field_is_read(cli, fraud, rows, tmp_path):
    """A field longer than the reader's block (1 MiB in `run`, 16 MiB in `stats`) gave
    pyarrow's "straddling object"; the block grows to the line."""
    data = rows.astype({"merchant": object})
    data.loc[data.index[data["event"] == "Swipe"][0], "merchant"] = "m" * (2 << 20)
    data.to_csv(fraud / "events.csv", index=False)
    plan = tmp_path / "plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "-q").code == 0
    result = cli("run", plan, fraud / "events.csv", "-o", tmp_path / "out", "-q",
                 "--engine", "local")
    assert result.code == 0, result.err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["rows_read"] == len(rows) and not metrics["rows_rejected"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_input_without_line_breaks_is_refused_at_the_limit(cli, fraud, fmt):
    """One 17 MiB line: an error naming the line and the limit (it was read whole)."""
    start = "event,ts,user,device,country,amount,merchant\n" if fmt == "csv" else ""
    (fraud / f"flat.{fmt}").write_text(start + "x" * (17 << 20))
    _stats(cli, fraud / f"flat.{fmt}", _as(fraud, fmt)).one_error(
        f"flat.{fmt}", f"line {2 if fmt == 'csv' else 1} is longer than 16 MiB")


# ---- rows rejected: never a silent success ----

def _iso(rows: pd.DataFrame, share: float = 1.0) -> pd.DataFrame:
    """`rows` with the first `share` of their times written as ISO dates and times."""
    stamps = (pd.Timestamp("2024-01-01") + pd.to_timedelta(rows["ts"], unit="min")).dt.strftime(
        "%Y-%m-%dT%H:%M:%S.%f")
    cut = int(len(rows) * share)
    return rows.assign(ts=[*stamps[:cut], *rows["ts"][cut:]])


ADVICE = ("times such as '2024-01-01T00:00:05.762433' are not numbers: set source.time_format "
          "in the workload to their pattern, here \"yyyy-MM-dd'T'HH:mm:ss.SSSSSS\"")


@pytest.fixture
def fraud_plan(cli, fraud, tmp_path):
    plan = tmp_path / "plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "-q").code == 0
    return plan


def test_run_where_every_row_is_rejected_is_an_error(cli, fraud, rows, fraud_plan, tmp_path):
    """ISO times without `time_format`: `run -q` exited 0 with 0 matches; now an error that
    says what to set, and the earlier output stays."""
    _iso(rows).to_csv(fraud / "events.csv", index=False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.json").write_text("kept")  # an earlier run's output, as it laid it out
    cli("run", fraud_plan, fraud / "events.csv", "-o", out, "-q", "--engine",
        "local").one_error("events.csv", "no usable rows: all 300 rows rejected "
                           "(missing or unparsable time: 300)", ADVICE)
    assert [p.name for p in out.iterdir()] == ["metrics.json"]
    assert (out / "metrics.json").read_text() == "kept"


def test_run_with_rejected_rows_warns_even_when_quiet(cli, fraud, rows, fraud_plan, tmp_path):
    _iso(rows, 0.5).to_csv(fraud / "events.csv", index=False)
    result = cli("run", fraud_plan, fraud / "events.csv", "-o", tmp_path / "out", "-q",
                 "--engine", "local")
    assert result.code == 0 and not result.out, result.err
    assert result.err.splitlines() == [
        f"warning: {fraud / 'events.csv'}: 150 of 300 rows rejected (missing or unparsable "
        f"time: 150): {ADVICE}"]


def test_stats_where_every_row_is_rejected_says_what_to_set(cli, fraud, rows):
    _iso(rows).to_csv(fraud / "events.csv", index=False)
    _stats(cli, fraud / "events.csv", fraud / "workload.json").one_error(
        "no usable rows", ADVICE)


def test_a_time_format_that_does_not_fit_is_named(cli, fraud, rows):
    doc = json.loads((fraud / "workload.json").read_text())
    doc["source"]["time_format"] = "yyyy-MM-dd HH:mm:ss"
    (fraud / "workload.json").write_text(json.dumps(doc))
    _iso(rows).to_csv(fraud / "events.csv", index=False)
    _stats(cli, fraud / "events.csv", fraud / "workload.json").one_error(
        "no usable rows", "a time such as '2024-01-01T00:00:05.762433' does not fit "
        "source.time_format 'yyyy-MM-dd HH:mm:ss'")


def test_compare_events_where_every_row_is_rejected(cli, fraud, rows, tmp_path):
    _iso(rows).to_csv(fraud / "events.csv", index=False)
    out = tmp_path / "report"
    cli("compare", fraud / "workload.json", "--events", fraud / "events.csv", "-o", out,
        "-q", "--time-limit", "5").one_error("no usable rows", ADVICE)
    assert not out.exists() and not list(tmp_path.glob("report*"))


def test_cover_where_every_row_is_rejected(cli, tmp_path):
    events = tmp_path / "events.jsonl"
    lines = (EXAMPLES / "mobile" / "events.jsonl").read_text().splitlines()[:200]
    events.write_text("".join(json.dumps({**json.loads(line), "t": "soon"}) + "\n"
                              for line in lines))
    plan = tmp_path / "plan.json"
    assert cli("optimize", EXAMPLES / "mobile" / "workload.json", "-o", plan, "-q").code == 0
    cli("cover", plan, events, "-o", tmp_path / "out", "-q").one_error(
        "events.jsonl", "no usable rows: all 200 rows rejected")
    assert not (tmp_path / "out").exists()


# ---- whole numbers near the 64-bit limits ----

def _longs(attributes: dict, patterns: list[dict]):
    """A CSV workload of types A and B with the given long attributes."""
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "type_column": "kind", "time_column": "ts"},
        "event_types": {t: {"attributes": {a: "long"}} for t, a in attributes.items()},
        "patterns": patterns})


def test_long_arithmetic_near_the_limit_matches_the_reference(tmp_path):
    """`a.n * 4 < 0` held for n = 2^63 - 1 in the engine (int64 wrapped around) and not in
    the reference semantics; the in-process engine's matches now equal the reference's."""
    workload = _longs({"A": "n", "B": "n"}, [
        {"name": "wraps", "structure": ["SEQ", "a:A", "b:B"], "within": 10,
         "where": ["a.n * 4 < 0", "b.n - a.n > 0", "-b.n < abs(a.n)"]}])
    big = [2**63 - 1, -2**63, 2**62, -2**62 - 1, 5, -5]
    events = pd.DataFrame({"__type": ["A", "B"] * 6, "__ts": [float(i) for i in range(12)],
                           "__id": list(range(12)), "n": big + big[::-1]})
    events.rename(columns={"__type": "kind", "__ts": "ts"}).drop(columns="__id").to_csv(
        tmp_path / "events.csv", index=False)
    expected = sorted(map(canonical, reference_matches(workload, events)["wraps"]))
    assert expected  # the negative a.n do match
    run_local_job(job_data(workload, trivial_plan(workload)), [str(tmp_path / "events.csv")],
                  tmp_path / "out", say=lambda _: None)
    lines = (tmp_path / "out" / "matches" / "part-00000.jsonl").read_text().splitlines()
    assert sorted(canonical(json.loads(line)) for line in lines) == expected


def test_long_keys_beyond_two_to_the_53_stay_apart(tmp_path):
    """A long attribute some rows lack was held as doubles, which merge whole numbers above
    2^53: two events keyed 2^62 and 2^62 + 1 matched as one key. Batches of 1 MiB, the
    first of A events only (int64), the later ones with B events (the column has gaps)."""
    workload = _longs({"A": "n", "B": "m"}, [
        {"name": "same_key", "structure": ["SEQ", "a:A", "b:A"], "within": 5,
         "partition_by": ["n"]},
        {"name": "a_then_b", "structure": ["SEQ", "x:A", "y:B"], "within": 1,
         "where": ["x.n == y.m"]}])
    rows = ["kind,ts,n,m", f"A,0,{2**62},", f"A,1,{2**62 + 1},"]
    rows += [f"A,{i},{i},," if i % 3 else f"B,{i},,{2**62 + i}" for i in range(2, 60_000)]
    (tmp_path / "events.csv").write_text("\n".join(rows) + "\n")
    for ordered in (True, False):  # the time-range path, and the pandas path
        if not ordered:
            (tmp_path / "events.csv").write_text("\n".join([rows[0], *rows[3:], *rows[1:3]]))
        metrics = run_local_job(job_data(workload, trivial_plan(workload)),
                                [str(tmp_path / "events.csv")], tmp_path / f"out{ordered}",
                                say=lambda _: None)
        assert metrics["matches"] == {"same_key": 0, "a_then_b": 0}, ordered


# ---- names in any script ----

def _renamed(fraud, names: dict[str, str]):
    """The fraud workload and events with names replaced (types, attributes, variables,
    patterns alike)."""
    text = (fraud / "workload.json").read_text()
    events = "\n".join((fraud / "events.csv").read_text().splitlines()[:1500]) + "\n"
    for old, new in names.items():
        text, events = text.replace(old, new), events.replace(old, new)
    (fraud / "workload.json").write_text(text)
    (fraud / "events.csv").write_text(events)
    return fraud / "workload.json"


def test_names_in_any_script_run_end_to_end(cli, fraud, tmp_path):
    """Non-ASCII letters were refused as non-letters (and each reported three times)."""
    renamed = {"Withdrawal": "Retrait_été", "amount": "Betrag", "country": "국가",
               "withdrawal_abroad_after_login": "取引_abroad", '"w:': '"ü:', "w.": "ü.",
               "s1": "σ1"}
    workload = _renamed(fraud, renamed)
    assert cli("validate", workload).code == 0
    assert cli("stats", fraud / "events.csv", "-w", workload, "-o", fraud / "stats.json",
               "-q").code == 0
    assert "Retrait_été" in json.loads((fraud / "stats.json").read_text())["rates"]
    plan = tmp_path / "plan.json"
    assert cli("optimize", workload, "--stats", fraud / "stats.json", "-o", plan,
               "-q").code == 0
    result = cli("run", plan, fraud / "events.csv", "-o", tmp_path / "out", "-q",
                 "--engine", "local")
    assert result.code == 0, result.err
    events = pd.read_csv(fraud / "events.csv").rename(columns={"event": "__type",
                                                              "ts": "__ts"})
    events["__id"] = range(len(events))
    expected = reference_matches(load_workload(workload), events)
    lines = (tmp_path / "out" / "matches" / "part-00000.jsonl").read_text().splitlines()
    found = sorted(canonical(json.loads(line)) for line in lines)
    assert found == sorted(canonical(m) for ms in expected.values() for m in ms)
    assert any(json.loads(line)["pattern"] == "取引_abroad" for line in lines)


@pytest.mark.parametrize("bad", ["Bad-Type", "2fast", "Bad Type"])
def test_an_invalid_type_name_is_one_error(cli, fraud, bad):
    """The name is reported where it is declared, not again at each pattern leaf and rate
    that uses it (a hyphen, a leading digit, a space)."""
    workload = _renamed(fraud, {"Withdrawal": bad})
    cli("validate", workload).one_error(f"event_types['{bad}']", "not a valid event type name",
                                        "letters of any script")


@pytest.mark.parametrize("command", ["stats", "run"])
def test_an_unclosed_quote_is_one_rejected_row_named_by_its_line(cli, fraud, rows, fraud_plan,
                                                                 tmp_path, command):
    """The 100th row opens a quote it never closes: one row rejected as `unclosed quote`,
    the 299 others read (the 200 after it vanished, uncounted), and the warning names its
    line (the header is line 1)."""
    lines = rows.to_csv(index=False).splitlines()
    lines[100] = lines[100].replace(",", ',"', 1)
    (fraud / "quote.csv").write_text("\n".join(lines) + "\n")
    if command == "stats":
        result = _stats(cli, fraud / "quote.csv", fraud / "workload.json")
        assert _counts(fraud) | {"unknown_types": {}} == {
            "read": 300, "valid": 299, "rejected": 1, "reasons": {"unclosed quote": 1},
            "unknown_types": {}}
    else:
        result = cli("run", fraud_plan, fraud / "quote.csv", "-o", tmp_path / "out", "-q")
        metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
        assert metrics["rows_read"] == 300
        assert metrics["rows_rejected"] == {"unclosed quote": 1}
    assert result.code == 0, result.err
    assert (f"1 of 300 rows rejected (unclosed quote: 1): line 101 of {fraud / 'quote.csv'} "
            "opens a quote it does not close") in result.err
