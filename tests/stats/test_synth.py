"""The synthetic generator: determinism, known rates and chains, selectivities with closed forms,
and files that the Spark source reader reads back as the same events."""

from __future__ import annotations

import numpy as np
import pytest

from cepplan.stats.synth import markov_occupancy, synthesize, zipf_rates
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload, load_workload
from cepplan.workload.model import OccurrenceModel
from cepplan.workload.source_spec import reader_arguments
from cepplan.workload.spark_source import read_events, valid_rows
from tests.conftest import EXAMPLES


def _workload(source: dict, **extra) -> object:
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s", "source": source,
        "event_types": {"A": {"attributes": {"x": "double", "n": "long", "g": "string"}},
                        "B": {"attributes": {"x": "double", "ok": "bool"}}},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"],
                      "where": ["a.x < b.x", "a.x > 75", "abs(a.x - b.x) < 50"],
                      "within": 10}],
        **extra})


def test_deterministic_for_a_seed_and_sorted():
    workload = load_workload(EXAMPLES / "stocks" / "workload.json")
    one = synthesize(workload, duration=500, seed=7, truth_draws=1000)
    two = synthesize(workload, duration=500, seed=7, truth_draws=1000)
    other = synthesize(workload, duration=500, seed=8, truth_draws=1000)
    assert one.events.equals(two.events) and one.truth == two.truth
    assert not one.events.equals(other.events)
    ts = one.events["__ts"].to_numpy()
    assert np.all(np.diff(ts) >= 0)
    assert one.events["__id"].tolist() == list(range(len(ts)))


def test_zipf_rates_follow_the_law():
    rates = zipf_rates(["a", "b", "c", "d"], 10.0, 0.255, np.random.default_rng(0))
    ordered = sorted(rates.values(), reverse=True)
    expected = np.arange(1, 5) ** -0.255
    assert np.allclose(ordered, 10 * expected / expected.sum())


def test_poisson_counts_and_closed_form_selectivities():
    workload = _workload({"format": "csv", "type_column": "t", "time_column": "ts"})
    result = synthesize(workload, duration=20_000, seed=3, rates={"A": 2.0, "B": 0.5},
                        truth_draws=400_000)
    counts = result.events["__type"].value_counts()
    for name, rate in (("A", 2.0), ("B", 0.5)):
        mean = rate * 20_000
        assert abs(counts[name] - mean) < 4 * np.sqrt(mean)
    sel = result.truth["selectivities"]["p"]
    assert sel["a.x < b.x"] == pytest.approx(0.5, abs=0.005)
    assert sel["a.x > 75"] == pytest.approx(0.25, abs=0.005)
    assert sel["abs(a.x - b.x) < 50"] == pytest.approx(0.75, abs=0.005)
    b_rows = result.events[result.events["__type"] == "B"]
    assert b_rows["n"].isna().all() and b_rows["ok"].notna().all()


def test_markov_type_follows_its_chain():
    chain = ((0.95, 0.05), (0.3, 0.7))
    occupied = markov_occupancy(chain, 1, 400_000, np.random.default_rng(5))
    prev, nxt = occupied[:-1], occupied[1:]
    assert nxt[prev].mean() == pytest.approx(0.7, abs=0.01)
    assert nxt[~prev].mean() == pytest.approx(0.05, abs=0.003)
    workload = _workload({"format": "csv", "type_column": "t", "time_column": "ts"})
    model = OccurrenceModel("markov", order=1, time_step=2.0, transition=chain)
    result = synthesize(workload, duration=50_000, seed=1, models={"B": model},
                        truth_draws=1000)
    b = result.events.loc[result.events["__type"] == "B", "__ts"].to_numpy()
    steps = np.floor(b / 2.0).astype(int)
    assert len(np.unique(steps)) == len(steps)  # at most one event per step
    pi_one = 0.05 / (0.05 + 0.3)  # stationary P(event) of a two-state chain
    assert result.truth["rates"]["B"] == pytest.approx(pi_one / 2.0)
    assert len(b) / 50_000 == pytest.approx(pi_one / 2.0, rel=0.05)
    assert result.truth["models"]["B"]["kind"] == "markov"


@pytest.mark.parametrize("source", [
    {"format": "csv", "header": True, "type_column": "t", "time_column": "ts"},
    {"format": "csv", "header": False, "columns": ["t", "when", "x", "n", "g", "ok", "key"],
     "type_column": "t", "time_column": "when", "time_format": "yyyy-MM-dd HH:mm:ss.SSS",
     "key_columns": ["key"]},
    {"format": "jsonl", "type_column": "t", "time_column": "ts", "id_column": "eid"},
    {"format": "parquet", "type_column": "t", "time_column": "ts", "key_columns": ["g"]},
])
def test_written_files_read_back_as_the_same_events(spark, tmp_path, source):
    workload = _workload(source)
    result = synthesize(workload, duration=300, seed=2, truth_draws=1000)
    path = tmp_path / f"events.{source['format']}"
    write_events(result.events, workload, path)
    frame = read_events(spark, str(path), **reader_arguments(workload)).toPandas()
    assert frame["__reject"].isna().all()
    got = valid_rows(spark.createDataFrame(frame)).toPandas().sort_values("__id")
    want = result.events
    assert got["__id"].tolist() == want["__id"].tolist()
    assert got["__type"].tolist() == want["__type"].tolist()
    assert np.allclose(got["__ts"], want["__ts"], rtol=0, atol=1e-6)
    assert np.allclose(got["x"], want["x"], rtol=1e-12)
    assert got["n"].fillna(-1).astype(int).tolist() == want["n"].fillna(-1).astype(int).tolist()
    if "time_format" in source:
        assert np.allclose(want["__ts"] * 1000, np.round(want["__ts"] * 1000), atol=1e-4)
