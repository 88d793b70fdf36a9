"""Limits of workloads, checked at both ends: the deepest expression accepted goes through
validate, optimize, generate, the printer, the portable form and both evaluators; one level
more is one clear error (never a RecursionError). Rates and windows beyond what the cost models
can compute are refused where they are read. Arbitrary JSON shapes never crash the loader."""

from __future__ import annotations

import copy
import json

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.errors import InputError
from cepplan.workload import build_workload
from cepplan.workload.expr.evaluate import holds
from cepplan.workload.expr.parser import MAX_LENGTH, MAX_TREE_DEPTH, parse
from cepplan.workload.expr.portable import from_portable, to_portable
from cepplan.workload.expr.printer import to_text
from cepplan.workload.expr.vectorized import evaluate
from tests.hostile.conftest import EXAMPLES

BASE = json.loads((EXAMPLES / "fraud" / "workload.json").read_text())


def chain(terms: int, op: str = "+", term: str = "w.amount") -> str:
    """`w.amount + w.amount + ... > 0`: a left-deep tree `terms` + 1 levels deep."""
    return f" {op} ".join([term] * terms) + " > 0"


def with_predicate(text: str) -> dict:
    doc = copy.deepcopy(BASE)
    doc["patterns"][0]["where"].append(text)
    return doc


DEEPEST = MAX_TREE_DEPTH - 1  # terms: the comparison adds one level


def _list_depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((_list_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return max((_list_depth(v) for v in value.values()), default=0)
    return 0


def test_deepest_chain_goes_end_to_end(cli, tmp_path):
    text = "w.amount + " + chain(DEEPEST - 1, term="1")
    assert len(text) < MAX_LENGTH
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(with_predicate(text)))
    assert cli("validate", workload).code == 0
    assert cli("optimize", workload, "-o", tmp_path / "plan.json", "--quiet").code == 0
    result = cli("generate", tmp_path / "plan.json", "-o", tmp_path / "job", "--quiet")
    assert result.code == 0, result.err
    job = orjson.loads((tmp_path / "job" / "job.json").read_bytes())
    assert _list_depth(job) >= MAX_TREE_DEPTH  # the whole tree travels in the job


@pytest.mark.parametrize("op", ["+", "*", "-", "and", "or"])
def test_deepest_chain_evaluates_like_the_reference(op):
    term = "a.x > 0" if op in ("and", "or") else "a.x"
    text = " and ".join([term] * DEEPEST) if op == "and" else (
        " or ".join([term] * DEEPEST) if op == "or" else chain(DEEPEST, op, term))
    tree = parse(text.replace(" > 0 > 0", " > 0"))
    assert parse(to_text(tree)) == tree
    assert from_portable(to_portable(tree)) == tree
    values = np.array([-2.0, 0.5, 1.0, 3.0])
    vector = evaluate(to_portable(tree), {("a", "x"): values}, len(values))
    reference = [holds(tree, {"a": {"x": float(v), "ts": 0.0}}) for v in values]
    assert vector.tolist() == reference


@pytest.mark.parametrize("terms", [DEEPEST + 1, 300, 800, 2000])
def test_deeper_chain_is_one_clear_error(cli, tmp_path, terms):
    text = "w.amount+" + "+".join(["1"] * terms) + " > 0"
    assert len(text) <= MAX_LENGTH
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(with_predicate(text)))
    cli("validate", workload).one_error("patterns[0].where[2]", "nested more than")


@pytest.mark.parametrize("text", [
    "(" * 70 + "w.amount" + ")" * 70 + " > 0",
    "-" * 120 + "w.amount > 0",
    "not " * 120 + "w.amount > 0",
    "abs(" * 70 + "w.amount" + ")" * 70 + " > 0",
], ids=["parens", "minus", "not", "calls"])
def test_deep_nesting_is_one_clear_error(cli, tmp_path, text):
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(with_predicate(text)))
    cli("validate", workload).one_error("patterns[0].where[2]", "levels deep")


@pytest.mark.parametrize(("path", "value", "where", "fragment"), [
    (("statistics", "rates", "Login"), 1e308, "statistics.rates.Login", "at most"),
    (("statistics", "rates", "Login"), 1e13, "statistics.rates.Login", "at most"),
    (("patterns", 0, "within"), 1e300, "patterns[0].within", "longer than"),
    (("patterns", 0, "within"), "1e300s", "patterns[0].within", "longer than"),
    (("patterns", 0, "within"), "1e20d", "patterns[0].within", "longer than"),
], ids=["rate-1e308", "rate-1e13", "window-1e300", "window-1e300s", "window-1e20d"])
def test_overflowing_numbers_refused_where_read(cli, tmp_path, path, value, where, fragment):
    doc = copy.deepcopy(BASE)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(doc))
    cli("optimize", workload, "-o", tmp_path / "p.json").one_error(where, fragment)


def test_largest_rate_and_window_still_plan(cli, tmp_path):
    """At the limits (1e12 events per time unit, windows of 1e12 time units) the cost
    models stay finite and the optimizer writes a plan."""
    doc = copy.deepcopy(BASE)
    doc["statistics"]["rates"] = {k: 1e12 for k in doc["statistics"]["rates"]}
    for pattern in doc["patterns"]:
        pattern["within"] = 1e12
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(doc))
    result = cli("optimize", workload, "-o", tmp_path / "p.json", "--quiet")
    assert result.code == 0, result.err
    plan = json.loads((tmp_path / "p.json").read_text())
    costs = [p["detection"]["expected_cost"] for p in plan["patterns"].values()]
    assert all(np.isfinite(costs)) and all(c >= 0 for c in costs)


# integers within 64 bits: a file's larger ones already arrive as floats (orjson)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)
PLACES = [("format",), ("time_unit",), ("event_types",), ("event_types", "Login"),
          ("event_types", "Login", "attributes"), ("patterns",), ("patterns", 0),
          ("patterns", 0, "structure"), ("patterns", 0, "structure", 1), ("patterns", 0, "where"),
          ("patterns", 0, "where", 0), ("patterns", 0, "within"), ("patterns", 0, "latency"),
          ("patterns", 0, "partition_by"), ("statistics",), ("statistics", "rates"),
          ("statistics", "rates", "Login"), ("statistics", "selectivities"), ("source",),
          ("source", "time_column"), ("options",), ("contexts",), ("consumers",)]


@settings(max_examples=150)
@given(place=st.sampled_from(PLACES), value=JSON)
def test_any_workload_shape_builds_or_is_an_input_error(place, value):
    doc = copy.deepcopy(BASE)
    target = doc
    for key in place[:-1]:
        target = target[key]
    target[place[-1]] = value
    try:
        build_workload(doc, file="w.json")
    except InputError as err:
        assert err.problems and all(p.file == "w.json" for p in err.problems)
