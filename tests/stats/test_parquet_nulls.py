"""Columns the Parquet footers prove free of NULLs, and the Spark reader leaving their NULL
checks out: the reject reasons are the same with and without the proof, and the counting
scan then reads only the columns it counts by."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from cepplan.stats.parquet_nulls import columns_without_nulls
from cepplan.workload import build_workload
from cepplan.workload.source_spec import reader_arguments
from cepplan.workload.spark_source import REJECT, read_events

SOURCE = {"format": "parquet", "type_column": "kind", "time_column": "t", "key_columns": ["k"]}
WORKLOAD = build_workload({
    "format": "cepplan.workload/1", "time_unit": "s", "source": SOURCE,
    "schemas": {"E": {"x": "double", "n": "long"}},
    "event_types": {"A": {"schema": "E"}, "B": {"schema": "E"}},
    "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "where": ["a.x < b.x"],
                  "within": 5}]})


def _table(rows: int, x_null_at: int | None = None) -> pa.Table:
    x = [float(i) for i in range(rows)]
    if x_null_at is not None:
        x[x_null_at] = None
    return pa.table({"kind": ["A", "B", "Z", "A"] * (rows // 4), "t": [float(i) for i in
                                                                     range(rows)],
                     "x": x, "n": pa.array(range(rows), pa.int32()),
                     "k": ["k0", "k1"] * (rows // 2)})


def test_footers_prove_only_columns_without_nulls_in_every_row_group_of_every_file(tmp_path):
    clean, dirty = tmp_path / "clean.parquet", tmp_path / "dirty.parquet"
    pq.write_table(_table(400), clean, row_group_size=100)
    pq.write_table(_table(400, x_null_at=350), dirty, row_group_size=100)  # last group only
    assert columns_without_nulls([str(clean)], WORKLOAD) == {"kind", "t", "x", "n", "k"}
    assert columns_without_nulls([str(clean), str(dirty)], WORKLOAD) == {"kind", "t", "n", "k"}
    assert columns_without_nulls([str(tmp_path)], WORKLOAD) == {"kind", "t", "n", "k"}
    no_stats = tmp_path / "bare" / "e.parquet"
    no_stats.parent.mkdir()
    pq.write_table(_table(400), no_stats, write_statistics=False)
    assert columns_without_nulls([str(no_stats)], WORKLOAD) == set()
    missing = tmp_path / "absent.parquet"
    assert columns_without_nulls([str(missing)], WORKLOAD) == set()
    assert columns_without_nulls(["s3://bucket/e.parquet"], WORKLOAD) == set()


def test_rejects_are_the_same_with_the_proof_and_the_count_reads_fewer_columns(spark,
                                                                              tmp_path):
    path = tmp_path / "e.parquet"
    table = _table(400, x_null_at=5)  # a missing x on an A row; n int32 is cast to long
    pq.write_table(table, path, row_group_size=100)
    proven = columns_without_nulls([str(path)], WORKLOAD)
    assert proven == {"kind", "t", "n", "k"}
    frames = {label: read_events(spark, [str(path)], **reader_arguments(WORKLOAD),
                                 no_nulls=nulls).orderBy("__id").toPandas()
              for label, nulls in (("checked", ()), ("proven", proven))}
    assert frames["checked"].equals(frames["proven"])
    reasons = frames["proven"][REJECT].value_counts().to_dict()
    assert reasons == {"unknown type": 100, "missing attribute 'x'": 1}
    # with every column proven, the count by reason needs neither attribute column
    clean = tmp_path / "clean.parquet"
    pq.write_table(_table(400).set_column(3, "n", pa.array(range(400), pa.int64())), clean)
    events = read_events(spark, [str(clean)], **reader_arguments(WORKLOAD),
                         no_nulls=columns_without_nulls([str(clean)], WORKLOAD))
    counted = events.groupBy(REJECT, "__type", "k").count()
    plan = counted._jdf.queryExecution().executedPlan().toString()
    read_schema = plan.split("ReadSchema: ")[1].split("\n")[0]
    assert "x:" not in read_schema and "n:" not in read_schema, read_schema
    assert {r[REJECT] for r in counted.collect()} == {None, "unknown type"}
