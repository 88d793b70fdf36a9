"""Selection strategies in workload.json: where they cannot apply, one error naming the
pattern's `strategy` (exit code 2 from the CLI); without `strategy` a workload means what it
always meant; `next`/`strict` load as the core pattern with hidden negated operands."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepplan.cli.app import app
from cepplan.errors import InputError
from cepplan.workload import build_workload, load_workload
from cepplan.workload.model import NEGATED

BASE = {
    "format": "cepplan.workload/1",
    "time_unit": "s",
    "event_types": {t: {"attributes": {"v": "long", "k": "string"}} for t in ("A", "B")},
    "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B"], "where": ["a.v < b.v"],
                  "within": 5}],
}


def doc_with(**changes) -> dict:
    doc = copy.deepcopy(BASE)
    doc["patterns"][0].update(changes)
    return doc


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"structure": ["AND", "a:A", "b:B"]}, "applies to a SEQ pattern, not AND"),
    ({"structure": ["OR", "a:A", "b:B"], "where": ["a.v > 1"]},
     "applies to a SEQ pattern, not OR"),
])
@pytest.mark.parametrize("strategy", ["next", "strict"])
def test_strategy_that_cannot_apply_is_refused(changes, fragment, strategy):
    with pytest.raises(InputError) as caught:
        build_workload(doc_with(strategy=strategy, **changes), file="w.json")
    (problem,) = caught.value.problems
    assert problem.path == "patterns[0].strategy"
    assert fragment in problem.message


@pytest.mark.parametrize(("strategy", "kleene", "fragment"), [
    ("next", ["KLEENE", "b:B"], "'next' is not supported with a KLEENE operand (b)"),
    ({"b": "next"}, ["KLEENE", "b:B"], "'next' is not supported with a KLEENE operand (b)"),
    ("strict", None, "lone KLEENE variable is not supported"),
])
def test_strategy_kleene_cannot_take_is_refused(strategy, kleene, fragment, tmp_path: Path):
    """`next` with a Kleene variable, and `strict` with one that may bind nothing, are not
    built: one error line at the pattern's strategy, exit 2."""
    path = tmp_path / "w.json"
    structure = ["SEQ", "a:A", kleene] if kleene else ["SEQ", ["KLEENE", "b:B"]]
    path.write_text(json.dumps(doc_with(strategy=strategy, structure=structure, where=[])))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "patterns[0].strategy" in line and fragment in line, result.output
    assert "Traceback" not in result.output


def test_strict_kleene_loads_as_consecutive_with_hidden_negations():
    """`strict` with a Kleene b marks b consecutive and puts one hidden NOT per type on each
    side; with `seq_ties: allow` the gaps read b's first and last events."""
    doc = doc_with(strategy="strict", structure=["SEQ", "a:A", ["KLEENE", "b:B"], "c:A"])
    doc["options"] = {"seq_ties": "allow"}
    pattern = build_workload(doc).pattern("p")
    assert pattern.operand("b").consecutive and not pattern.operand("a").consecutive
    texts = [p.text for p in pattern.predicates]
    assert "__strict_b_0.ts < FIRST(b.ts)" in texts and "__strict_c_0.ts > LAST(b.ts)" in texts


def test_strategy_over_another_patterns_matches_is_refused():
    doc = copy.deepcopy(BASE)
    doc["patterns"].append({"name": "q", "structure": ["SEQ", "x:p", "y:A"], "within": 9,
                            "strategy": "next"})
    with pytest.raises(InputError) as caught:
        build_workload(doc, file="w.json")
    (problem,) = caught.value.problems
    assert problem.path == "patterns[1].strategy" and "x binds another pattern" in problem.message


def test_unknown_strategy_is_one_error_line_exit_2(tmp_path: Path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc_with(strategy="relaxed")))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "patterns[0].strategy" in lines[0], result.output
    assert "Traceback" not in result.output


def test_a_workload_without_strategy_keeps_its_meaning():
    """Every example workload loads to the same patterns with `strategy: any` written out, and
    no pattern gains an operand or a predicate."""
    for path in sorted(Path("examples").glob("*/workload.json")):
        plain = load_workload(path)
        doc = json.loads(path.read_text())
        for pattern in doc["patterns"]:
            pattern["strategy"] = "any"
        explicit = build_workload(doc, file=str(path))
        for before, after in zip(plain.patterns, explicit.patterns, strict=True):
            assert before.operands == after.operands and before.predicates == after.predicates
            assert after.strategy == "any"
            assert all(not o.var.startswith("__") for o in after.operands)


def test_next_and_strict_load_as_hidden_negations():
    """`next` puts one hidden NOT of y's type carrying y's conditions before y; `strict` one per
    event type; with `seq_ties: allow` they also bound the hidden event's timestamp."""
    nxt = build_workload(doc_with(strategy="next")).pattern("p")
    assert [(o.var, o.event_type, o.kind) for o in nxt.operands] == [
        ("a", "A", "plain"), ("__next_b", "B", NEGATED), ("b", "B", "plain")]
    assert [p.text for p in nxt.predicates] == ["a.v < b.v", "a.v < __next_b.v"]
    doc = doc_with(strategy="strict")
    doc["options"] = {"seq_ties": "allow"}
    strict = build_workload(doc).pattern("p")
    assert [(o.event_type, o.kind) for o in strict.operands] == [
        ("A", "plain"), ("A", NEGATED), ("B", NEGATED), ("B", "plain")]
    assert "__strict_b_0.ts > a.ts" in [p.text for p in strict.predicates]


@pytest.mark.parametrize(("strategy", "place", "fragment"), [
    ({"a": "next"}, "patterns[0].strategy.a", "'a' is the first event of the match"),
    ({"z": "next"}, "patterns[0].strategy.z", "'z' is not a variable of this pattern"),
    ({"b": "nope"}, "patterns[0].strategy.b", "'nope' is not one of 'any', 'next', 'strict'"),
    (3, "patterns[0].strategy", "expected a string or an object, found 3"),
])
def test_a_per_variable_strategy_names_a_later_variable(strategy, place, fragment):
    with pytest.raises(InputError) as caught:
        build_workload(doc_with(strategy=strategy), file="w.json")
    (problem,) = caught.value.problems
    assert problem.path == place and fragment in problem.message, problem


def test_per_variable_strategy_rewrites_only_its_pair():
    """FlinkCEP's begin(a).followedByAny(b).next(c): only c's pair gets hidden negations."""
    doc = doc_with(structure=["SEQ", "a:A", "b:B", "c:A"], strategy={"c": "strict"})
    pattern = build_workload(doc).pattern("p")
    assert [o.var for o in pattern.operands] == ["a", "b", "__strict_c_0", "__strict_c_1", "c"]
