"""The two statistics engines side by side on a real local SparkSession: the in-process engine
(pyarrow) and the Spark job give the same `stats.json` — equal counts, rejects by reason, keys
and regions; rates, intervals and selectivities equal to float tolerance; the same model — on
synthetic CSV (formatted times), JSON lines and Parquet files with bad rows, keys, regions and a
Markov-bursty type. The readers are compared row by row on a file of awkward values."""

from __future__ import annotations

import json
import math

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepplan.engine_adapter.engine_choice import choose_engine
from cepplan.sources import local_source, time_format
from cepplan.stats.engines import measure
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload, spark_source
from cepplan.workload.durations import SECONDS_PER_UNIT
from cepplan.workload.model import OccurrenceModel
from cepplan.workload.source_spec import reader_arguments

BURSTY = OccurrenceModel("markov", order=1, time_step=1.0, transition=((0.9, 0.1), (0.3, 0.7)))
SOURCES = {
    "csv": {"format": "csv", "type_column": "kind", "time_column": "t",
            "time_format": "yyyy-MM-dd HH:mm:ss.SSS", "key_columns": ["g"]},
    "jsonl": {"format": "jsonl", "type_column": "kind", "time_column": "t",
              "key_columns": ["g"]},
    "parquet": {"format": "parquet", "type_column": "kind", "time_column": "t",
                "key_columns": ["g"]},
}


def _workload(source: dict) -> object:
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s", "source": source,
        "schemas": {"E": {"x": "double", "n": "long", "g": "string", "zone": "string"}},
        "event_types": {"P": {"schema": "E", "region": "zone"}, "Q": {"schema": "E"},
                        "B": {"schema": "E"}},
        "patterns": [
            {"name": "pq", "structure": ["SEQ", "a:P", "b:Q"], "partition_by": ["g"],
             "where": ["a.x < b.x", "a.n > 50"], "within": 5},
            {"name": "burst", "structure": ["SEQ", ["KLEENE", "k:B"], "q:Q"],
             "where": ["k.x < NEXT(k.x)", "q.x < 20"], "within": 10},
            {"name": "pair", "structure": ["AND", "a:P", "c:Q"],
             "where": ["a.x + c.x > 100"], "within": 3},
        ]})


BAD_CSV = ["P,2024-01-01 00:00:01.000,1,2,k0,r1,extra",  # too many fields
           "P,not a time,1,2,k0,r1", "Z,2024-01-01 00:00:02.000,1,2,k0,r1",
           "Q,2024-01-01 00:00:03.000,abc,2,k1,r0", "Q,2024-01-01 00:00:04.000,1,2.5,k1,r0",
           "B,2024-01-01 00:00:05.000,1,2,,r0", "B,2024-02-30 00:00:05.000,1,2,k0,r0"]
BAD_JSON = ['{"kind": "P", "t": 3', '[1, 2]', '{"kind": "Z", "t": 4, "x": 1, "n": 2, "g": "k0"}',
            '{"kind": "Q", "t": "soon", "x": 1, "n": 2, "g": "k0"}',
            '{"kind": "Q", "t": 5, "x": true, "n": 2, "g": "k0", "zone": "r0"}',
            '{"kind": "B", "t": 6, "x": 1.5, "n": 7.5, "g": "k0", "zone": "r0"}']


def _write(fmt: str, directory) -> tuple[object, list[str]]:
    """Synthetic events in `fmt` (two files for CSV, so ids differ between the engines) with
    bad rows appended; returns the workload and the paths."""
    workload = _workload(SOURCES[fmt])
    result = synthesize(workload, duration=6000, seed=5, rates={"P": 2.0, "Q": 1.5},
                        models={"B": BURSTY}, truth_draws=1000)
    events = result.events
    if fmt == "csv":
        half = len(events) // 2
        paths = [directory / "a.csv", directory / "b.csv"]
        write_events(events.iloc[:half], workload, paths[0])
        write_events(events.iloc[half:], workload, paths[1])
        columns = paths[1].read_text().splitlines()[0].split(",")
        assert columns == ["kind", "t", "x", "n", "g", "zone"]
        with paths[1].open("a") as handle:
            handle.write("\n".join(BAD_CSV) + "\n")
        return workload, [str(p) for p in paths]
    path = directory / f"events.{fmt}"
    write_events(events, workload, path)
    if fmt == "jsonl":
        with path.open("a") as handle:
            handle.write("\n".join(BAD_JSON) + "\n")
    else:
        table = pq.read_table(path)
        bad = pa.table({"kind": ["P", None, "Z", "Q"], "t": [1.0, 2.0, 3.0, float("nan")],
                        "x": [None, 1.0, 1.0, 1.0], "n": [1, 1, 1, 1],
                        "g": ["k0", "k0", "k0", "k0"], "zone": ["r0", "r0", "r0", "r0"]})
        pq.write_table(pa.concat_tables([table, bad.cast(table.schema)]), path)
    return workload, [str(path)]


def _assert_same(local, spark, where=""):
    """Equal documents: exact for integers and text, 1e-9 relative for floats."""
    if isinstance(local, dict):
        assert local.keys() == spark.keys(), where
        for key in local:
            if key != "provenance":
                _assert_same(local[key], spark[key], f"{where}.{key}")
    elif isinstance(local, list):
        assert len(local) == len(spark), where
        for index, (a, b) in enumerate(zip(local, spark, strict=True)):
            _assert_same(a, b, f"{where}[{index}]")
    elif isinstance(local, float) and isinstance(spark, float):
        assert (math.isnan(local) and math.isnan(spark)) or local == pytest.approx(
            spark, rel=1e-9, abs=1e-12), where
    else:
        assert local == spark, where


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_engines_write_the_same_statistics(fmt, spark, tmp_path):
    workload, paths = _write(fmt, tmp_path)
    options = {"time_step": 1.0, "sample": 3000, "seed": 2}
    local = measure(paths, workload, engine="local", **options)
    remote = measure(paths, workload, engine="spark", spark=spark, **options)
    _assert_same(local, remote)
    assert (local["provenance"]["engine"], remote["provenance"]["engine"]) == ("local", "spark")
    # the comparison has teeth: bad rows, keys, regions, a bursty type, a sampled selectivity
    assert local["rows"]["rejected"] >= 4 and len(local["rows"]["reasons"]) >= 3
    assert local["models"]["B"]["kind"] == "markov"
    assert local["keys"]["rates"]["P"] and local["regions"]["P"]["groups"] == 4
    assert "blocks of" in local["selectivity_details"]["pq"]["a.x < b.x"]["sample"]
    assert local["selectivity_details"]["burst"]["k.x < NEXT(k.x)"]["n"] > 100


def test_expected_rejects_in_the_csv(tmp_path):
    workload, paths = _write("csv", tmp_path)
    rows = measure(paths, workload, engine="local")["rows"]
    # g is a key and an attribute: an empty g is a missing attribute; Feb 30 is no time
    assert rows["reasons"] == {"malformed row": 1, "missing or unparsable time": 2,
                               "unknown type": 1, "unparsable attribute 'x'": 1,
                               "unparsable attribute 'n'": 1, "missing attribute 'g'": 1}
    assert rows["unknown_types"] == {"Z": 1}


AWKWARD = """kind,t,x,n,flag
A,1,1.5,7,true
A,2,2.5
A,3,3.5,8,t,extra
A,4, 4.5 ,9,YES

A,5,"5,5",10,no
A,6,1e3,1.5,0
A,7,NaN,+3,1
A,8,inf, 4 ,f
A,9,1d,0x10,y
A,11,"",3,n
A, 12 ,-Infinity,9999999999999999999,true
A,13,1.,1e2,maybe
A,14,.5,-0,false
B,15,1,2,true
,16,1,2,true
A,,1,2,true
"""


def _plain(values: pd.Series) -> list:
    """Values as text (NaN equals NaN), numbers as floats (Spark's nullable longs are)."""
    return [str(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
            for v in values.astype(object).tolist()]


def test_readers_agree_row_by_row(spark, tmp_path):
    path = tmp_path / "awkward.csv"
    path.write_text(AWKWARD)
    source = {"format": "csv", "type_column": "kind", "time_column": "t"}
    attributes = {"A": {"x": "double", "n": "long", "flag": "bool"}}
    local = pd.concat(local_source.read_batches([str(path)], source, attributes, "s"))
    remote = spark_source.read_events(spark, [str(path)], source, attributes, "s").toPandas()
    local = local.sort_values("__id").reset_index(drop=True)
    remote = remote.sort_values("__id").reset_index(drop=True)
    assert list(local.columns) == list(remote.columns)
    reasons = [[None if pd.isna(v) else v for v in f["__reject"]] for f in (local, remote)]
    assert reasons[0] == reasons[1]
    good = local["__reject"].isna()
    for column in ("__type", "__ts", "x", "n", "flag"):
        a, b = (_plain(f.loc[good, column]) for f in (local, remote))
        assert a == b, column
    assert local["__id"].tolist() == remote["__id"].tolist() == list(range(len(local)))


def test_reject_reasons_and_time_formats_match_spark(spark):
    for name in ("REJECT", "REJECT_MALFORMED", "REJECT_TYPE_MISSING", "REJECT_TYPE_UNKNOWN",
                 "REJECT_TIME", "REJECT_ID"):
        assert getattr(local_source, name) == getattr(spark_source, name)
    texts = ["202401010001", "2024010100011", "202402300001", "202402290000", "209912312359",
             " 202401010001", "2024-1-1", "2024-01-01 10:00", "12024-01-01 10:00",
             "24-02-29 23:59", None]
    frame = spark.createDataFrame([(t,) for t in texts], "v string")
    from pyspark.sql import functions as F

    for pattern, unit in (("yyyyMMddHHmm", "min"), ("yyyyMMddHH'00'", "h"),
                          ("yyyy-MM-dd HH:mm", "s"), ("yy-MM-dd HH:mm", "min")):
        expected = [None if r[0] is None else r[0] / (1e6 * SECONDS_PER_UNIT[unit])
                    for r in frame.select(F.unix_micros(F.try_to_timestamp(
                        "v", F.lit(pattern)))).collect()]
        parse = time_format.time_parser(pattern, unit)
        got = parse(pa.array(texts, pa.string()))
        assert [None if math.isnan(v) else v for v in got] == expected, pattern


ZONED = {"yyyy-MM-dd'T'HH:mm:ss.SSSXXX": [
    "2024-03-01T10:00:00.000Z", "2024-03-01T11:00:00.250+01:00", "2024-03-01T04:30:00.5-05:30",
    "2024-03-01t10:00:01.000z", "2024-03-01T10:00:02.000+00:00", "2024-03-01T10:00:03.000+0100",
    "2024-03-01T10:00:04.000+19:00", "2024-03-01T10:00:05.000"],
    "yyyy-MM-dd HH:mm:ssX": ["2024-03-01 11:00:00+01", "2024-03-01 11:30:00+0130",
                             "2024-03-01 10:00:00Z", "2024-03-01 11:00:00+01:00"]}


def test_both_engines_read_zoned_times_alike(spark, tmp_path):
    """Zone offsets in several spellings (Z, z, +01:00, -05:30, +01, +0130), and offsets the
    pattern does not read: the same instants, the same rows rejected."""
    attributes = {"A": {"x": "double"}}
    for pattern, stamps in ZONED.items():
        path = tmp_path / "zoned.csv"
        path.write_text("kind,t,x\n" + "".join(f"A,{s},1\n" for s in stamps))
        source = {"format": "csv", "type_column": "kind", "time_column": "t",
                  "time_format": pattern}
        local = pd.concat(local_source.read_batches([str(path)], source, attributes, "s"))
        remote = spark_source.read_events(spark, [str(path)], source, attributes,
                                          "s").toPandas().sort_values("__id")
        assert local["__ts"].tolist() == pytest.approx(remote["__ts"].tolist(), nan_ok=True)
        assert local["__reject"].isna().sum() == remote["__reject"].isna().sum() > 2, pattern


def test_auto_engine_choice(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("kind,t\n")
    assert choose_engine("auto", None, [str(path)]) == "local"
    assert choose_engine("auto", "local[2]", [str(path)]) == "spark"
    assert choose_engine("auto", None, ["s3://bucket/events"]) == "spark"
    assert choose_engine("spark", None, [str(path)]) == "spark"
    json.dumps(reader_arguments(_workload(SOURCES["csv"])))


def test_local_second_pass_gives_the_same_sample(tmp_path):
    """When the sample's candidate rows exceed what the local engine keeps, it reads the files
    again for them: the document is the same."""
    from cepplan.stats.collect import collect_statistics, scan_columns
    from cepplan.stats.local_scan import LocalScan

    workload, paths = _write("parquet", tmp_path)
    columns, groups = scan_columns(workload)
    documents = [collect_statistics(LocalScan(paths, workload, columns, groups,
                                              keep_rows=keep), paths, workload, sample=3000)
                 for keep in (10, 10_000_000)]
    _assert_same(*documents)
    assert documents[0]["selectivity_details"]["pq"]["a.x < b.x"]["n"] > 100


@pytest.mark.parametrize("scale", [None, 100.0, 0.01])
def test_sample_does_not_depend_on_the_estimate(scale, spark, tmp_path, monkeypatch):
    """The blocks gathered during the scan come from estimated type counts; whether they are
    missing (None), too high (too few blocks gathered: read again) or too low (more gathered,
    cut down), both engines write the document of the true counts."""
    from cepplan.stats import collect, row_estimate

    workload, paths = _write("parquet", tmp_path)
    options = {"time_step": 1.0, "sample": 3000, "seed": 4}
    expected = measure(paths, workload, engine="local", **options)
    true_counts = row_estimate.estimate_type_counts(paths, workload)
    monkeypatch.setattr(collect, "estimate_type_counts", lambda *_: None if scale is None else {
        name: count * scale for name, count in true_counts.items()})
    for engine in ("local", "spark"):
        _assert_same(measure(paths, workload, engine=engine, spark=spark, **options), expected)


@pytest.mark.parametrize("guess", ["none", "some", "with an absent group"])
def test_spark_counts_groups_whatever_the_first_rows_suggest(guess, spark, tmp_path,
                                                             monkeypatch):
    """The Spark job counts the groups found in the first rows without grouping them and
    any other group in a second scan: the same key and region counts whichever groups the
    first rows show (none: both grouping sets, as for text input)."""
    from cepplan.stats import spark_scan

    workload, paths = _write("parquet", tmp_path)
    options = {"time_step": 1.0, "sample": 3000, "seed": 2}
    expected = measure(paths, workload, engine="local", **options)
    found = spark_scan.head_groups(paths, workload, ["g", "zone"], 100)
    assert found is not None and len(found) == 16  # 4 keys x 4 regions, all in the first rows
    guesses = {"none": None, "some": found[:5],
               "with an absent group": [("k9", None), *found[3:9]]}
    monkeypatch.setattr(spark_scan, "head_groups", lambda *_: guesses[guess])
    _assert_same(measure(paths, workload, engine="spark", spark=spark, **options), expected)


def test_keyed_statistics_are_equal_on_many_skewed_keys(spark, tmp_path):
    """The keyed section of a partitioned pattern (keys, per-key counts and hottest shares,
    the key profile's classes, co-occurrence within keys on the sample) on 300 Zipf-skewed
    keys: the same on both engines, to float rounding."""
    workload = _workload(SOURCES["parquet"])
    made = synthesize(workload, duration=3000, seed=9, rates={"P": 2.0, "Q": 1.5},
                      models={"B": BURSTY}, n_keys=300, key_skew=1.2, truth_draws=1000)
    path = tmp_path / "events.parquet"
    write_events(made.events, workload, path)
    options = {"time_step": 1.0, "sample": 4000, "seed": 3}
    local = measure([str(path)], workload, engine="local", **options)
    remote = measure([str(path)], workload, engine="spark", spark=spark, **options)
    _assert_same(local["keyed"], remote["keyed"], "keyed")
    _assert_same(local["selectivities"], remote["selectivities"], "selectivities")
    keyed = local["keyed"]["pq"]
    assert keyed["keys"] > 250 and len(keyed["profile"]["classes"]) > 5
    assert keyed["types"]["P"]["hottest_share"]["1%"] > 0.1  # skewed: the top 3 keys
    assert keyed["cooccurrence"]["tuples"] and keyed["cooccurrence"]["coverage"]
