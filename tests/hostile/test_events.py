"""Hostile event files through the real Spark reader: values that cannot be what the workload
says are rejected and counted by reason, or are one clear error — never a Spark overflow and
never a silent cast (true/false read as 1.0/0.0)."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepplan.sources import local_source
from cepplan.workload import load_workload
from cepplan.workload.source_spec import reader_arguments
from cepplan.workload.spark_source import (
    REJECT,
    REJECT_TIME,
    SourceError,
    read_events,
)
from tests.hostile.conftest import EXAMPLES

FRAUD = EXAMPLES / "fraud"
pytestmark = pytest.mark.case_seconds(300)  # the shared SparkSession may start in a case


def _reasons(spark, path, workload) -> dict[str, int]:
    events = read_events(spark, str(path), **reader_arguments(workload))
    counted = events.groupBy(REJECT).count().collect()
    return {row[REJECT]: row["count"] for row in counted}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return pd.read_csv(FRAUD / "events.csv").head(200)


BAD_TIMES = ["1e300", "-1e300", "inf", "nan", "", "soon", "1e18"]


def test_unusable_timestamps_rejected_and_counted(spark, tmp_path, frame):
    """One file, one Spark job: each unusable time (overflowing, infinite, not a number,
    empty, text, beyond 1e17 time units) is one rejected row, the rest are read."""
    bad = frame.astype({"ts": object})
    rows = list(range(3, 3 + 2 * len(BAD_TIMES), 2))
    bad.loc[rows, "ts"] = BAD_TIMES
    path = tmp_path / "events.csv"
    bad.to_csv(path, index=False)
    reasons = _reasons(spark, path, load_workload(FRAUD / "workload.json"))
    assert reasons == {None: len(frame) - len(BAD_TIMES), REJECT_TIME: len(BAD_TIMES)}


def _parquet_workload(tmp_path, frame: pd.DataFrame):
    doc = json.loads((FRAUD / "workload.json").read_text())
    doc["source"] = {**doc["source"], "format": "parquet"}
    doc["source"].pop("header", None)
    path = tmp_path / "workload.json"
    path.write_text(json.dumps(doc))
    return load_workload(path)


def test_parquet_boolean_amount_is_an_error_not_a_cast(spark, tmp_path, frame):
    data = frame.assign(amount=frame["amount"].fillna(0) > 500)
    data.to_parquet(tmp_path / "events.parquet")
    workload = _parquet_workload(tmp_path, frame)
    with pytest.raises(SourceError, match="'amount' holds boolean values, but the workload "
                                          "says double"):
        _reasons(spark, tmp_path / "events.parquet", workload)


def test_parquet_text_amount_rows_rejected_by_reason(spark, tmp_path, frame):
    text = frame["amount"].map(lambda v: "" if pd.isna(v) else repr(float(v)))
    text.iloc[[1, 2, 5]] = ["lots", "12,5", "NaN?"]
    data = frame.assign(amount=text.where(text != "", None))
    data.to_parquet(tmp_path / "events.parquet")
    reasons = _reasons(spark, tmp_path / "events.parquet", _parquet_workload(tmp_path, frame))
    needs = frame["event"].isin(["Withdrawal", "Swipe"])
    junk = needs.iloc[[1, 2, 5]].sum()
    missing = (needs & frame["amount"].isna()).sum()
    assert reasons.get("unparsable attribute 'amount'", 0) == junk
    assert reasons.get("missing attribute 'amount'", 0) == missing
    assert sum(reasons.values()) == len(frame)


def test_stats_on_a_timestamp_of_1e300_counts_one_rejected_row(cli, spark, fraud):
    data = pd.read_csv(fraud / "events.csv")
    data.loc[5, "ts"] = 1e300
    data.to_csv(fraud / "events.csv", index=False)
    result = cli("stats", fraud / "events.csv", "-w", fraud / "workload.json", "-o",
                 fraud / "stats.json", "--quiet")
    assert result.code == 0, result.err
    rows = json.loads((fraud / "stats.json").read_text())["rows"]
    assert rows["read"] == len(data) and rows["rejected"] == 1
    assert rows["reasons"] == {REJECT_TIME: 1}


def _hostile_files(folder, frame: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Case name -> (path, source format) of files both readers must treat alike."""
    text = frame.to_csv(index=False)
    body = frame.to_csv(index=False, header=False).splitlines()
    (folder / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (folder / "events.csv.gz").write_bytes(gzip.compress(text.encode()))
    (folder / "twice.csv").write_text("\n".join([text.splitlines()[0] + ",Amount",
                                                 *(line + ",1" for line in body)]))
    mixed = folder / "mixed"
    mixed.mkdir()
    (mixed / "a.csv").write_text(text)
    frame.to_parquet(mixed / "b.parquet")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    nested = table.set_column(table.schema.get_field_index("amount"), "amount",
                              pa.array([{"v": 1.0}] * len(frame)))
    pq.write_table(nested, folder / "nested.parquet")
    return {"bom": (folder / "bom.csv", "csv"), "gzip": (folder / "events.csv.gz", "csv"),
            "twice": (folder / "twice.csv", "csv"), "mixed": (mixed, "csv"),
            "nested": (folder / "nested.parquet", "parquet")}


def _outcomes(spark, path, arguments: dict) -> tuple[object, object]:
    """Per reader (in-process, Spark) the rows per reject reason, or the refusal's message."""
    try:
        frame = pd.concat(local_source.read_batches([str(path)], **arguments))
        local = {None if pd.isna(k) else k: v for k, v in
                 frame[REJECT].value_counts(dropna=False).items() if v}
    except local_source.SourceError as err:
        local = err.message
    try:
        remote = dict(read_events(spark, [str(path)], **arguments).groupBy(REJECT)
                      .count().collect())
    except SourceError as err:
        remote = err.message
    return local, remote


def test_both_readers_read_or_refuse_hostile_files_alike(spark, tmp_path, frame):
    """A byte order mark, a .gz file, a column named twice (letter case aside), a directory
    mixing CSV and Parquet, a nested Parquet column: the same rows or the same refusal."""
    arguments = reader_arguments(load_workload(FRAUD / "workload.json"))
    for case, (path, fmt) in _hostile_files(tmp_path, frame).items():
        source = {**arguments["source"], "format": fmt}
        local, remote = _outcomes(spark, path, {**arguments, "source": source})
        assert local == remote, case
        assert isinstance(local, dict) == (case in ("bom", "gzip")), (case, local)
