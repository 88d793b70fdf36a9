"""Hostile event files through the real Spark reader: values that cannot be what the workload
says are rejected and counted by reason, or are one clear error — never a Spark overflow and
never a silent cast (true/false read as 1.0/0.0)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

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
