"""Malformed stats.json and plan.json: one error naming the file, the JSON path and the problem
(never an AttributeError or TypeError); a stats file of another workload is refused; one of
another time unit is converted, and the output says so. Property tests feed arbitrary JSON
shapes to the loaders in-process: they return or raise InputError, nothing else."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.errors import InputError
from cepplan.planner.plan import read_plan
from cepplan.stats.stats_file import read_stats
from cepplan.workload import load_workload

GOOD_STATS = {"format": "cepplan.stats/1", "time_unit": "min",
              "rates": {"PasswordReset": 0.02, "Login": 1.5, "Withdrawal": 0.4, "Swipe": 6.0},
              "selectivities": {"account_takeover": {"w.amount > 500": 0.05}},
              "models": {"Login": {"kind": "poisson"}}}


def _put(path: tuple, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


# (id, change, JSON path in the message, fragment of the message)
STATS_CASES = [
    ("top-list", lambda d: [d], "format", "not a cepplan statistics file"),
    ("top-string", lambda d: "stats", "format", "not a cepplan statistics file"),
    ("wrong-format", _put(("format",), "cepplan.stats/2"), "format", "not a cepplan"),
    ("rates-list", _put(("rates",), [1, 2]), "rates", "expected an object, found a list"),
    ("rates-string", _put(("rates",), "many"), "rates", "expected an object"),
    ("rates-missing", lambda d: d.pop("rates") and d, "rates", "missing"),
    ("rate-string", _put(("rates", "Login"), "1.5"), "rates.Login", "expected a number"),
    ("rate-null", _put(("rates", "Login"), None), "rates.Login", "expected a number"),
    ("rate-bool", _put(("rates", "Login"), True), "rates.Login", "expected a number"),
    ("rate-object", _put(("rates", "Login"), {"v": 1}), "rates.Login", "expected a number"),
    ("rate-negative", _put(("rates", "Login"), -1), "rates.Login", "must be at least 0, found -1"),
    ("rate-1e308", _put(("rates", "Login"), 1e308), "rates.Login",
     "must be at most 1e+12, found 1e+308"),
    ("rate-unknown-type", _put(("rates", "Nobody"), 1.0), "rates.Nobody", "unknown event type"),
    ("selectivities-list", _put(("selectivities",), []), "selectivities", "expected an object"),
    ("selectivity-entry-string", _put(("selectivities", "account_takeover"), "x"),
     "selectivities.account_takeover", "expected an object"),
    ("selectivity-above-1", _put(("selectivities", "account_takeover", "w.amount > 500"), 2),
     "selectivities.account_takeover", "must be at most 1"),
    ("selectivity-unknown-pattern", _put(("selectivities", "nope"), {}),
     "selectivities.nope", "unknown pattern"),
    ("selectivity-unknown-predicate",
     _put(("selectivities", "account_takeover"), {"w.amount > 1": 0.5}),
     "selectivities.account_takeover", "no predicate written"),
    ("models-list", _put(("models",), [1]), "models", "expected an object"),
    ("model-list", _put(("models", "Login"), []), "models.Login", "expected an object"),
    ("model-kind-bogus", _put(("models", "Login"), {"kind": "zipf"}), "models.Login.kind",
     "is not one of"),
    ("model-kind-missing", _put(("models", "Login"), {}), "models.Login.kind", "missing"),
    ("markov-order-99", _put(("models", "Login"), {"kind": "markov", "order": 99}),
     "models.Login.order", "must be at most 8, found 99"),
    ("markov-transition-string", _put(("models", "Login"), {"kind": "markov", "order": 1,
                                                            "transition": "x"}),
     "models.Login.transition", "expected a list"),
    ("bernoulli-p-2", _put(("models", "Login"), {"kind": "bernoulli", "p": 2}),
     "models.Login.p", "must be at most 1, found 2"),
    ("time-unit-bogus", _put(("time_unit",), "fortnight"), "time_unit", "is not one of"),
    ("time-unit-number", _put(("time_unit",), 60), "time_unit", "is not one of"),
    ("digest-of-another-workload", _put(("workload_digest",), "0" * 64), "workload_digest",
     "another workload"),
    ("digest-not-string", _put(("workload_digest",), 7), "workload_digest", "expected a string"),
    ("rows-string", _put(("rows",), "all"), "rows", "expected an object"),
]


@pytest.mark.parametrize(("change", "where", "fragment"), [c[1:] for c in STATS_CASES],
                         ids=[c[0] for c in STATS_CASES])
def test_malformed_stats_file(cli, fraud, change, where, fragment):
    doc = copy.deepcopy(GOOD_STATS)
    doc = change(doc) or doc
    stats = fraud / "stats.json"
    stats.write_text(json.dumps(doc))
    line = cli("optimize", fraud / "workload.json", "--stats", stats, "-o",
               fraud / "plan.json").one_error(f"{stats}: {where}" if where else str(stats),
                                              fragment)
    assert len(line) < 400
    assert not (fraud / "plan.json").exists()


@pytest.mark.parametrize(("content", "fragment"), [
    (b"", "not valid JSON"), (b"{", "not valid JSON"), (b"\xff\xfe", "not valid JSON"),
    (b"[" * 5000 + b"]" * 5000, "not valid JSON"), (b"NaN", "not valid JSON"),
], ids=["empty", "truncated", "binary", "nested-5000", "nan"])
def test_unparsable_stats_file(cli, fraud, content, fragment):
    stats = fraud / "stats.json"
    stats.write_bytes(content)
    cli("optimize", fraud / "workload.json", "--stats", stats).one_error(str(stats), fragment)


def test_stats_in_seconds_converted_for_a_workload_in_minutes(cli, fraud, tmp_path):
    """The same statistics per second give the same plan as per minute, and the output says
    it converted them (the issue: stats in minutes read as seconds, rates 60x off)."""
    per_min = fraud / "events.truth.json"
    doc = json.loads(per_min.read_text())
    doc["time_unit"] = "s"
    doc["rates"] = {k: v / 60 for k, v in doc["rates"].items()}
    per_s = tmp_path / "per_s.json"
    per_s.write_text(json.dumps(doc))
    first = cli("optimize", fraud / "workload.json", "--stats", per_min, "-o", tmp_path / "a")
    second = cli("optimize", fraud / "workload.json", "--stats", per_s, "-o", tmp_path / "b")
    assert first.code == second.code == 0
    assert "converted to per min (x 60)" in second.err and "converted" not in first.err
    a, b = (json.loads((tmp_path / n).read_text()) for n in "ab")
    assert a["patterns"] == b["patterns"]
    assert a["provenance"]["total_expected_cost"] == pytest.approx(
        b["provenance"]["total_expected_cost"], rel=1e-12)


def test_stats_of_an_edited_workload_refused(cli, fraud, tmp_path):
    """Ground truth written for one workload is refused once the workload changes."""
    assert cli("synth", fraud / "workload.json", "-o", tmp_path / "ev.csv", "--duration", "20",
               "--quiet").code == 0
    assert cli("optimize", fraud / "workload.json", "--stats", tmp_path / "ev.truth.json",
               "-o", tmp_path / "p.json", "--quiet").code == 0
    doc = json.loads((fraud / "workload.json").read_text())
    doc["patterns"][0]["within"] = "6min"
    (fraud / "workload.json").write_text(json.dumps(doc))
    cli("optimize", fraud / "workload.json", "--stats", tmp_path / "ev.truth.json").one_error(
        "ev.truth.json: workload_digest", "another workload")


# -- plan.json ---------------------------------------------------------------------------------

PLAN_CASES = [
    ("top-list", lambda d: [d], "format", "not a cepplan plan"),
    ("top-number", lambda d: 3, "format", "not a cepplan plan"),
    ("patterns-list", _put(("patterns",), []), "patterns", "expected an object"),
    ("patterns-string", _put(("patterns",), "all"), "patterns", "expected an object"),
    ("pattern-string", _put(("patterns", "account_takeover"), "fast"),
     "patterns.account_takeover", "expected an object"),
    ("detection-missing", lambda d: d["patterns"]["account_takeover"].pop("detection") and d,
     "patterns.account_takeover.detection", "missing"),
    ("steps-string", _put(("patterns", "account_takeover", "detection", "steps"), "r,l,w"),
     "patterns.account_takeover.detection.steps", "expected a list"),
    ("steps-empty", _put(("patterns", "account_takeover", "detection", "steps"), []),
     "patterns.account_takeover.detection.steps", "is empty: at least 1 item(s) needed"),
    ("step-empty", _put(("patterns", "account_takeover", "detection", "steps"), [["r", "l",
                                                                                  "w"], []]),
     "patterns.account_takeover.detection.steps[1]", "is empty: at least 1 item(s) needed"),
    ("step-numbers", _put(("patterns", "account_takeover", "detection", "steps"), [["r", "l", 3]]),
     "patterns.account_takeover.detection.steps[0][2]", "expected a string"),
    ("step-unknown-variable", _put(("patterns", "account_takeover", "detection", "steps"),
                                   [["r", "l", "zz"]]),
     "patterns.account_takeover.detection.steps", "must cover each variable"),
    ("step-variable-twice", _put(("patterns", "account_takeover", "detection", "steps"),
                                 [["r", "l"], ["l", "w"]]),
     "patterns.account_takeover.detection.steps", "must cover each variable"),
    ("cost-string", _put(("patterns", "account_takeover", "detection", "expected_cost"), "low"),
     "patterns.account_takeover.detection.expected_cost", "expected a number"),
    ("latency-float", _put(("patterns", "account_takeover", "detection", "latency"), 1.5),
     "patterns.account_takeover.detection.latency", "expected a whole number"),
    ("pareto-string", _put(("patterns", "account_takeover", "pareto"), "x"),
     "patterns.account_takeover.pareto", "expected a list"),
    ("order-wrong", _put(("patterns", "account_takeover", "order"), ["r", "r", "w"]),
     "patterns.account_takeover.order", "each variable"),
    ("unknown-pattern", _put(("patterns", "ghost"), {"detection": {"steps": [["g"]]}}),
     "patterns.ghost", "has no pattern"),
    ("pattern-missing", lambda d: d["patterns"].pop("card_testing") and d,
     "patterns.card_testing", "has no plan"),
    ("workload-string", _put(("workload",), "fraud"), "workload", "expected an object"),
    ("digest-mismatch", _put(("workload", "sha256"), "0" * 64), "workload.sha256",
     "another version"),
    ("provenance-list", _put(("provenance",), []), "provenance", "expected an object"),
]


@pytest.fixture
def plan_doc(cli, fraud, tmp_path) -> dict:
    plan = tmp_path / "good-plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "--quiet").code == 0
    return json.loads(plan.read_text())


@pytest.mark.parametrize(("change", "where", "fragment"), [c[1:] for c in PLAN_CASES],
                         ids=[c[0] for c in PLAN_CASES])
def test_malformed_plan_file(cli, fraud, tmp_path, plan_doc, change, where, fragment):
    doc = change(plan_doc) or plan_doc
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    job = tmp_path / "job"
    cli("generate", plan, "--workload", fraud / "workload.json", "-o", job).one_error(
        f"{plan}: {where}", fragment)
    assert not job.exists()


# -- property tests: any JSON shape --------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)
KEYS = ["format", "rates", "selectivities", "models", "time_unit", "workload_digest",
        "patterns", "workload", "detection", "steps", "pareto", "order", "expected_cost",
        "latency", "Login", "Swipe", "account_takeover", "kind", "order", "transition", "p",
        "time_step", "w.amount > 500"]


def _shaped(base: dict) -> st.SearchStrategy:
    """Documents near `base`: a value somewhere replaced by an arbitrary JSON value."""
    def replace(doc, path, value):
        doc = copy.deepcopy(doc)
        target = doc
        for key in path[:-1]:
            if not isinstance(target, dict) or key not in target:
                return doc
            target = target[key]
        if isinstance(target, dict):
            target[path[-1]] = value
        return doc
    paths = st.lists(st.sampled_from(KEYS), min_size=1, max_size=4)
    return st.builds(replace, st.just(base), paths, JSON)


PROPERTY = settings(max_examples=60,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _workload_and_file(tmp_path: Path, name: str):
    from tests.hostile.conftest import EXAMPLES
    return load_workload(EXAMPLES / "fraud" / "workload.json"), tmp_path / name


@PROPERTY
@given(doc=_shaped(GOOD_STATS) | JSON)
def test_any_stats_shape_loads_or_is_an_input_error(tmp_path, doc):
    workload, path = _workload_and_file(tmp_path, "stats.json")
    path.write_text(json.dumps(doc))
    try:
        read_stats(path, workload, [])
    except InputError as err:
        assert err.problems and all(p.file == str(path) for p in err.problems)


@PROPERTY
@given(doc=st.builds(lambda d: d, JSON) | st.just(None))
def test_any_plan_shape_loads_or_is_an_input_error(tmp_path, doc):
    workload, path = _workload_and_file(tmp_path, "plan.json")
    base = {"format": "cepplan.plan/1", "patterns": {
        name: {"detection": {"steps": [sorted(p.variables)]}}
        for name, p in workload.patterns_by_name.items()}}
    candidates = [doc, {**base, "patterns": doc}, {**base, "workload": doc},
                  {**base, "patterns": {**base["patterns"], "card_testing": doc}},
                  {**base, "patterns": {**base["patterns"], "card_testing": {"detection": doc}}}]
    for candidate in candidates:
        path.write_text(json.dumps(candidate))
        try:
            read_plan(path, workload)
        except InputError as err:
            assert err.problems and all(p.file == str(path) for p in err.problems)
