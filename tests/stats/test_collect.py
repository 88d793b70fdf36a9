"""The statistics recover the parameters of synthetic data: rates within 3 % (>= 100k events
per type), Markov transitions and selectivities within 0.03, the right model for a Poisson and
for a bursty type (measured in-process; test_local_vs_spark.py holds the Spark engine's
document equal); bad rows are counted and bad input is an error, on both engines alike."""

from __future__ import annotations

import numpy as np
import pytest

from cepplan.errors import InputError
from cepplan.stats.engines import measure
from cepplan.stats.stats_file import read_stats, schema_problems, write_stats
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload
from cepplan.workload.model import OccurrenceModel

CHAIN = ((0.9, 0.1), (0.3, 0.7))  # P(event | none before) = 0.1, P(event | event) = 0.7

WORKLOAD = {
    "format": "cepplan.workload/1", "time_unit": "s",
    "source": {"format": "parquet", "type_column": "kind", "time_column": "t",
               "key_columns": ["g"]},
    "schemas": {"E": {"x": "double", "y": "double", "g": "string"}},
    "event_types": {"P": {"schema": "E"}, "Q": {"schema": "E"}, "B": {"schema": "E"}},
    "patterns": [
        {"name": "pq", "structure": ["SEQ", "a:P", "b:Q"],
         "where": ["a.x < b.x", "a.x > 75", "abs(a.x - b.x) < 50"], "within": 5},
        {"name": "burst", "structure": ["SEQ", ["KLEENE", "k:B"], "q:Q"],
         "where": ["k.x < NEXT(k.x)", "q.y < 20"], "within": 10},
        {"name": "keyed", "structure": ["AND", "a:P", "c:Q"], "partition_by": ["g"],
         "where": ["a.y + c.y > 100"], "within": 3},
    ],
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    workload = build_workload(WORKLOAD)
    model = OccurrenceModel("markov", order=1, time_step=1.0, transition=CHAIN)
    result = synthesize(workload, duration=420_000, seed=11, rates={"P": 0.5, "Q": 0.3},
                        models={"B": model}, truth_draws=400_000)
    path = tmp_path_factory.mktemp("collect") / "events.parquet"
    write_events(result.events, workload, path)
    document = measure([str(path)], workload, engine="local", time_step=1.0,
                                  markov_order=1, sample=100_000, seed=3)
    return workload, result, document


def test_rates_within_three_percent(measured):
    _, result, document = measured
    for name, true_rate in result.truth["rates"].items():
        assert result.truth["counts"][name] >= 100_000
        assert document["rates"][name] == pytest.approx(true_rate, rel=0.03)
        low, high = document["types"][name]["rate_ci95"]
        assert low < document["rates"][name] < high
    assert document["rates"]["P"] == pytest.approx(0.5, rel=0.03)


def test_markov_chain_and_model_choice(measured):
    _, _, document = measured
    occurrence = document["occurrence"]
    fitted = np.array(occurrence["B"]["markov"]["transition"])
    assert np.abs(fitted - np.array(CHAIN)).max() < 0.03
    assert occurrence["B"]["choice"]["model"] == "markov"
    assert document["models"]["B"]["kind"] == "markov"
    assert occurrence["B"]["markov"]["burstiness"] > 2  # 0.7 / 0.25
    for name in ("P", "Q"):
        assert occurrence[name]["choice"]["model"] == "poisson"
        assert occurrence[name]["poisson"]["dispersion_index"] == pytest.approx(1, abs=0.03)
    # a Poisson process's occupancy per step: 1 - exp(-rate)
    assert occurrence["P"]["bernoulli"]["p"] == pytest.approx(1 - np.exp(-0.5), abs=0.01)


def test_selectivities_within_0_03(measured):
    _, result, document = measured
    closed_form = {("pq", "a.x < b.x"): 0.5, ("pq", "a.x > 75"): 0.25,
                   ("pq", "abs(a.x - b.x) < 50"): 0.75, ("burst", "k.x < NEXT(k.x)"): 0.5,
                   ("burst", "q.y < 20"): 0.2, ("keyed", "a.y + c.y > 100"): 0.5}
    for (pattern, text), value in closed_form.items():
        got = document["selectivities"][pattern][text]
        assert got == pytest.approx(value, abs=0.03)
        assert got == pytest.approx(result.truth["selectivities"][pattern][text], abs=0.03)
        detail = document["selectivity_details"][pattern][text]
        assert detail["ci95"][0] <= got <= detail["ci95"][1] and detail["n"] > 1000
    kinds = {t: d["kind"] for t, d in document["selectivity_details"]["burst"].items()}
    assert kinds == {"k.x < NEXT(k.x)": "kleene", "q.y < 20": "filter"}


def test_keys_and_document_round_trip(measured, tmp_path):
    workload, result, document = measured
    per_key = {r["key"]["g"]: r["rate"] for r in document["keys"]["rates"]["P"]}
    assert set(per_key) == {"k0", "k1", "k2", "k3"}
    for rate in per_key.values():
        assert rate == pytest.approx(result.truth["rates"]["P"] / 4, rel=0.05)
    assert schema_problems(document, "stats.json") == []
    write_stats(document, tmp_path / "stats.json")
    statistics = read_stats(tmp_path / "stats.json", workload)
    assert statistics.rates["Q"] == pytest.approx(document["rates"]["Q"])
    assert statistics.models["B"].kind == "markov"
    assert statistics.selectivities["pq"]["a.x > 75"] == document["selectivities"]["pq"][
        "a.x > 75"]


def _csv_workload() -> object:
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "type_column": "kind", "time_column": "t"},
        "event_types": {"A": {"attributes": {"x": "double"}}},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:A"],
                      "where": ["a.x < b.x"], "within": 100}]})


# the Spark cases ask for the session by name: under xdist they run where its other users do
ENGINES = ["local", pytest.param("spark", marks=pytest.mark.xdist_group("spark"))]


def _measure(engine: str, request, path, workload, **options):
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    return measure([str(path)], workload, engine=engine, spark=spark, **options)


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_rows_are_counted_and_strict_refuses_them(engine, request, tmp_path):
    lines = ["kind,t,x"] + [f"A,{i},{i % 7}" for i in range(200)]
    lines += ["A,notatime,1", "Z,5,1", "Z,6,1", "A,7,"]
    path = tmp_path / "events.csv"
    path.write_text("\n".join(lines) + "\n")
    workload = _csv_workload()
    document = _measure(engine, request, path, workload)
    rows = document["rows"]
    assert (rows["read"], rows["valid"], rows["rejected"]) == (204, 200, 4)
    assert rows["reasons"] == {"missing or unparsable time": 1, "unknown type": 2,
                               "missing attribute 'x'": 1}
    assert rows["unknown_types"] == {"Z": 2}
    assert document["types"]["A"]["count"] == 200
    with pytest.raises(InputError, match="4 of 204 rows rejected"):
        _measure(engine, request, path, workload, strict=True)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("content, message", [
    ("kind,t,x\n", "no rows"),
    ("kind,t\nA,1\n", "'x' not in the input"),
    ("kind,t,x\nZ,1,2\nY,2,2\n", "no usable rows.*unknown types: Z, Y|unknown types: Y, Z"),
])
def test_bad_input_is_an_input_error(engine, request, tmp_path, content, message):
    path = tmp_path / "events.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        _measure(engine, request, path, _csv_workload())


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_column_error_names_the_file_once(engine, request, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("kind,t\nA,1\n")
    with pytest.raises(InputError) as info:
        _measure(engine, request, path, _csv_workload())
    (problem,) = info.value.problems
    assert problem.file == str(path)
    assert str(path) not in problem.message
    assert problem.render().count(str(path)) == 1


def test_order_by_type_and_step_is_lexsort():
    """Placing rows in their (type, step) slot gives lexsort's order; duplicates and spread
    steps fall back to lexsort itself."""
    from cepplan.stats.collect import _order_by_type_and_step

    rng = np.random.default_rng(5)
    for steps in (rng.permutation(50_000)[:40_000], rng.integers(0, 10 ** 12, 1_000),
                  rng.integers(0, 300, 1_000)):  # distinct, spread, with duplicates
        codes = rng.integers(0, 4, len(steps))
        assert np.array_equal(_order_by_type_and_step(codes, 4, steps),
                              np.lexsort((steps, codes)))
