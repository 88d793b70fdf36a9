"""The Spark source reader: canonical columns, casts, time parsing, ids, and counted rejects."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cepplan.workload import build_workload
from cepplan.workload.source_spec import reader_arguments
from cepplan.workload.spark_source import (
    REJECT,
    REJECT_MALFORMED,
    REJECT_TIME,
    REJECT_TYPE_UNKNOWN,
    SourceError,
    read_events,
    valid_rows,
)

ATTRS = {"A": {"x": "double", "n": "long"}, "B": {"x": "double", "flag": "bool"}}


def _rows(df) -> list[dict]:
    return [r.asDict() for r in df.orderBy("__id").collect()]


def test_csv_header_time_format_and_rejects(spark, tmp_path):
    path = tmp_path / "ev.csv"
    path.write_text(
        "kind,when,x,n,flag,grp\n"
        "A,202401010001,1.5,7,,g1\n"
        "B,202401010002,2.5,,true,g2\n"
        "C,202401010003,1,1,,g1\n"  # unknown type
        "A,2024-01-01,1,1,,g1\n"  # unparsable time
        "A,202401010005,abc,1,,g1\n"  # unparsable attribute
        "B,202401010006,3.0,,,g1\n"  # missing attribute flag
        "A,202401010007,4.0,9,,\n"  # missing key
    )
    source = {"format": "csv", "header": True, "type_column": "kind", "time_column": "when",
              "time_format": "yyyyMMddHHmm", "key_columns": ["grp"]}
    rows = _rows(read_events(spark, str(path), source, ATTRS, "min"))
    assert [r["__id"] for r in rows] == list(range(7))
    base = pd.Timestamp("2024-01-01T00:00Z").timestamp() / 60
    assert rows[0]["__ts"] == pytest.approx(base + 1)
    assert rows[0]["n"] == 7 and rows[0]["x"] == 1.5 and rows[0]["grp"] == "g1"
    assert rows[1]["flag"] is True and rows[1]["__ts"] == pytest.approx(base + 2)
    assert [r[REJECT] for r in rows] == [
        None, None, REJECT_TYPE_UNKNOWN, REJECT_TIME, "unparsable attribute 'x'",
        "missing attribute 'flag'", "missing key 'grp'"]


def test_jsonl_numeric_time_and_malformed_line(spark, tmp_path):
    path = tmp_path / "ev.jsonl"
    lines = [json.dumps({"t": "A", "ts": 10.25, "x": 1, "n": 2, "id": 100}),
             "{not json",
             json.dumps({"t": "B", "ts": 11, "x": 2.5, "flag": False, "id": 101}),
             json.dumps({"t": "B", "ts": 12, "x": 2.5, "flag": True, "id": "z"})]
    path.write_text("\n".join(lines) + "\n")
    source = {"format": "jsonl", "type_column": "t", "time_column": "ts", "id_column": "id"}
    df = read_events(spark, [str(path)], source, ATTRS, "s")
    rows = sorted((r.asDict() for r in df.collect()), key=lambda r: str(r["__id"]))
    reasons = sorted(str(r[REJECT]) for r in rows)
    assert reasons == sorted(["None", "None", REJECT_MALFORMED, "missing or unparsable id"])
    good = sorted(_rows(valid_rows(df)), key=lambda r: r["__id"])
    assert [(r["__type"], r["__ts"], r["__id"]) for r in good] == [("A", 10.25, 100),
                                                                    ("B", 11.0, 101)]
    assert good[1]["flag"] is False and "__reject" not in good[0]


def test_parquet_timestamp_column_and_exact_positions(spark, tmp_path):
    n = 50_000
    frame = pd.DataFrame({
        "ts": pd.to_datetime(1_700_000_000 + pd.RangeIndex(n), unit="s"),
        "x": [float(i) for i in range(n)], "n": list(range(n))})
    path = tmp_path / "ev.parquet"
    frame.to_parquet(path, index=False, coerce_timestamps="us", row_group_size=4000)
    source = {"format": "parquet", "type": "A", "time_column": "ts"}
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16384")  # several read partitions
    try:
        df = read_events(spark, str(path), source, {"A": ATTRS["A"]}, "ms")
        assert df.rdd.getNumPartitions() > 1
        got = df.orderBy("__id").toPandas()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)
    assert got["__id"].tolist() == list(range(n))
    assert got["n"].tolist() == list(range(n))  # the position is the row's position in the file
    assert got["__ts"].iloc[3] == pytest.approx((1_700_000_000 + 3) * 1000.0)
    assert got[REJECT].isna().all() and (got["__type"] == "A").all()


def test_missing_column_and_missing_path_are_source_errors(spark, tmp_path):
    path = tmp_path / "ev.csv"
    path.write_text("kind,ts,x\nA,1,2\n")
    source = {"format": "csv", "type_column": "kind", "time_column": "ts"}
    with pytest.raises(SourceError, match=r"'n'"):
        read_events(spark, str(path), source, ATTRS, "s")
    with pytest.raises(SourceError, match="no such file"):
        read_events(spark, str(tmp_path / "nope.csv"), source, ATTRS, "s")


def test_reader_arguments_from_a_workload():
    workload = build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": False, "columns": ["k", "t", "v"],
                   "type_column": "k", "time_column": "t"},
        "event_types": {"A": {"attributes": {"v": "double"}}},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:A"], "within": 5}]})
    args = reader_arguments(workload)
    assert args == {"source": {"format": "csv", "header": False, "time_column": "t",
                               "columns": ["k", "t", "v"], "type_column": "k"},
                    "attributes": {"A": {"v": "double"}}, "time_unit": "s"}
    json.dumps(args)  # plain, JSON-able
