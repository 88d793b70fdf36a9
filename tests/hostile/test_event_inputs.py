"""Hostile and malformed event files through the in-process engines (`stats`, `run`,
`compare --events`, `cover`): each is read as the workload's `source` says, or refused with
one clear error naming the file — never a traceback, never a silent wrong answer."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.hostile.conftest import EXAMPLES

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
