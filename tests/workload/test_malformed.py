"""Each malformed workload gets its own precise error (JSON path + problem) and exit code 2."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepplan.cli.app import app
from cepplan.errors import InputError
from cepplan.workload import build_workload, load_workload

BASE = {
    "format": "cepplan.workload/1",
    "time_unit": "s",
    "schemas": {"Trade": {"price": "double", "volume": "long", "sym": "string", "firm": "string"}},
    "event_types": {"A": {"schema": "Trade"}, "B": {"schema": "Trade"},
                    "C": {"attributes": {"price": "double", "sym": "string"}}},
    "patterns": [
        {"name": "p", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:C"],
         "where": ["a.price < b.price", "b.price < NEXT(b.price)"], "within": "10s"},
        {"name": "q", "structure": ["AND", "x:A", "y:p"], "within": 60},
    ],
}


def mutate(change) -> dict:
    doc = copy.deepcopy(BASE)
    change(doc)
    return doc


def pattern(doc: dict, index: int = 0) -> dict:
    return doc["patterns"][index]


def setter(*path, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


CONTEXTS = {"initial": "calm", "types": {"calm": {"patterns": ["p"]}},
            "transitions": [{"on": "q", "action": "switch", "from": "calm", "to": "calm"}]}
CONSUMERS = {"operators": {"avg": {"event_type": "A", "aggregate": "avg", "attribute": "price",
                                   "x": "price", "y": "price"}},
             "queries": [{"id": "c1", "operator": "avg", "region": [0, 0, 1, 1],
                          "window": {"count": 3}, "qor": {"precision": 0.5, "recall": 0.5}}]}

# (id, mutation, expected JSON path, fragment of the message)
CASES = [
    ("wrong-format", setter("format", value="cepplan.workload/9"), "format", "expected"),
    ("missing-patterns", lambda d: d.pop("patterns"), "patterns",
     "missing (a workload needs at least one pattern)"),
    ("unknown-top-key", setter("colour", value=1), "colour", "unknown key (known keys here: "),
    ("misspelt-key", setter("patterns", 0, "wher", value=[]), "patterns[0].wher",
     "unknown key (did you mean 'where'?)"),
    ("weight-zero", setter("patterns", 0, "weight", value=0), "patterns[0].weight",
     "must be more than 0, found 0"),
    ("bad-time-unit", setter("time_unit", value="fortnight"), "time_unit", "is not one of"),
    ("unknown-schema", setter("event_types", "A", "schema", value="Trad"),
     "event_types.A.schema", "unknown schema 'Trad'"),
    ("schema-and-attributes", setter("event_types", "C", "schema", value="Trade"),
     "event_types.C", "exactly one of"),
    ("bad-attribute-type", setter("event_types", "C", "attributes", "price", value="float"),
     "event_types.C.attributes.price", "is not one of"),
    ("reserved-ts-attribute", setter("event_types", "C", "attributes", "ts", value="double"),
     "event_types.C.attributes.ts", "'ts' is reserved"),
    ("unknown-leaf-type", setter("patterns", 0, "structure", 1, value="a:Z"),
     "patterns[0].structure[1]", "unknown event type 'Z'"),
    ("unknown-variable", setter("patterns", 0, "where", 0, value="a.price < d.price"),
     "patterns[0].where[0]", "unknown variable 'd'"),
    ("unknown-attribute", setter("patterns", 0, "where", 0, value="a.prize < b.price"),
     "patterns[0].where[0]", "has no attribute 'prize'"),
    ("type-mismatch", setter("patterns", 0, "where", 0, value="a.sym < 5"),
     "patterns[0].where[0]", "cannot compare a string with a long"),
    ("not-boolean", setter("patterns", 0, "where", 1, value="a.price + 1"),
     "patterns[0].where[1]", "must be true or false"),
    ("syntax-error", setter("patterns", 0, "where", 1, value="a.price <"),
     "patterns[0].where[1]", "expected a value, found end of text"),
    ("single-equals", setter("patterns", 0, "where", 0, value="a.sym = 'X'"),
     "patterns[0].where[0]", "use '=='"),
    ("bound-twice", setter("patterns", 0, "structure", 3, value="a:C"),
     "patterns[0].structure[3]", "variable 'a' is bound twice"),
    ("not-alone", setter("patterns", 0, "structure", value=["NOT", "a:A"]),
     "patterns[0].structure[0]", "NOT cannot stand alone"),
    ("not-under-or", setter("patterns", 0, "structure", value=["OR", "a:A", ["NOT", "c:C"]]),
     "patterns[0].structure[2]", "NOT cannot be used inside OR"),
    ("kleene-root", setter("patterns", 0, "structure", value=["KLEENE", "a:A"]),
     "patterns[0].structure[0]", "KLEENE cannot be the whole pattern"),
    ("kleene-of-not", setter("patterns", 0, "structure", 2, value=["KLEENE", ["NOT", "b:B"]]),
     "patterns[0].structure[2]", "KLEENE of NOT"),
    ("kleene-of-seq", setter("patterns", 0, "structure", 2, value=["KLEENE", ["SEQ", "b:B"]]),
     "patterns[0].structure[2][1]", "KLEENE applies to a single"),
    ("next-on-plain", setter("patterns", 0, "where", 1, value="a.price < NEXT(a.price)"),
     "patterns[0].where[1]", "NEXT() needs a KLEENE variable"),
    ("only-negated", setter("patterns", 0, "structure", value=["SEQ", ["NOT", "a:A"]]),
     "patterns[0].structure", "at least one operand that is not negated"),
    ("nested-operator", setter("patterns", 0, "structure", 3, value=["AND", "c:C", "d:A"]),
     "patterns[0].structure[3]", "nested AND inside one pattern is not supported"),
    ("or-join", lambda d: d["patterns"].__setitem__(0, {
        "name": "p", "structure": ["OR", "a:A", "c:C"], "where": ["a.price < c.price"]}),
     "patterns[0].where[0]", "in an OR pattern"),
    ("partition-missing", setter("patterns", 0, "partition_by", value=["firm"]),
     "patterns[0].partition_by", "'firm' is missing from the type of c"),
    ("window-zero", setter("patterns", 0, "within", value="0s"), "patterns[0].within",
     "must be positive"),
    ("window-negative", setter("patterns", 0, "within", value=-5), "patterns[0].within",
     "must be positive"),
    ("window-unparsable", setter("patterns", 0, "within", value="5 parsecs"),
     "patterns[0].within", "cannot read duration"),
    ("window-missing", lambda d: pattern(d).pop("within"), "patterns[0]", "needs a window"),
    ("latency-zero", setter("patterns", 0, "latency", value={"max_steps": 0}),
     "patterns[0].latency.max_steps", "at least 1 step"),
    ("cycle", setter("patterns", 0, "structure", 3, value="c:q"), "patterns[0].structure",
     "patterns form a cycle: "),
    ("self-cycle", setter("patterns", 1, "structure", 2, value="y:q"), "patterns[1].structure",
     "patterns form a cycle: q -> q"),
    ("duplicate-pattern", setter("patterns", 1, "name", value="p"), "patterns[1].name",
     "already used by patterns[0]"),
    ("pattern-named-like-type", setter("patterns", 1, "name", value="A"), "patterns[1].name",
     "also a primitive event type"),
    ("pattern-unknown-context", setter("patterns", 0, "contexts", value=["rush"]),
     "patterns[0].contexts[0]", "unknown context type 'rush'"),
    ("context-unknown-pattern", setter("contexts", value={**CONTEXTS,
        "types": {"calm": {"patterns": ["nope"]}}}), "contexts.types.calm.patterns[0]",
     "unknown pattern 'nope'"),
    ("transition-unknown-pattern", setter("contexts", value={**CONTEXTS, "transitions": [
        {"on": "ghost", "action": "initiate", "context": "calm"}]}),
     "contexts.transitions[0].on", "unknown pattern 'ghost'"),
    ("transition-unknown-context", setter("contexts", value={**CONTEXTS, "transitions": [
        {"on": "q", "action": "switch", "from": "calm", "to": "storm"}]}),
     "contexts.transitions[0].to", "unknown context type 'storm'"),
    ("initial-unknown", setter("contexts", value={**CONTEXTS, "initial": "storm"}),
     "contexts.initial", "initial context 'storm'"),
    ("consumer-unknown-operator", setter("consumers", value={**CONSUMERS, "queries": [
        {**CONSUMERS["queries"][0], "operator": "median"}]}),
     "consumers.queries[0].operator", "unknown operator 'median'"),
    ("consumer-unknown-type", setter("consumers", value={**CONSUMERS, "operators": {
        "avg": {**CONSUMERS["operators"]["avg"], "event_type": "Q"}}}),
     "consumers.operators.avg.event_type", "unknown event type 'Q'"),
    ("qor-out-of-range", setter("consumers", value={**CONSUMERS, "queries": [
        {**CONSUMERS["queries"][0], "qor": {"precision": 1.5, "recall": 0.5}}]}),
     "consumers.queries[0].qor.precision", "must be in [0, 1]"),
    ("negative-rate", setter("statistics", value={"rates": {"A": -1}}), "statistics.rates.A",
     "finite number >= 0"),
    ("rate-unknown-type", setter("statistics", value={"rates": {"Z": 1}}), "statistics.rates.Z",
     "unknown event type 'Z'"),
    ("selectivity-above-one", setter("statistics", value={"selectivities": {
        "p": {"a.price < b.price": 1.2}}}), "statistics.selectivities.p['a.price < b.price']",
     "in [0, 1]"),
    ("selectivity-unknown-predicate", setter("statistics", value={"selectivities": {
        "p": {"a.price > 0": 0.5}}}), "statistics.selectivities.p['a.price > 0']",
     "no predicate written"),
    ("markov-row-sum", setter("statistics", value={"models": {"A": {
        "kind": "markov", "order": 1, "transition": [[0.5, 0.4], [0.1, 0.9]]}}}),
     "statistics.models.A.transition[0]", "summing to 1"),
    ("markov-wrong-rows", setter("statistics", value={"models": {"A": {
        "kind": "markov", "order": 2, "transition": [[0.5, 0.5], [0.1, 0.9]]}}}),
     "statistics.models.A.transition", "needs 4 rows"),
    ("bernoulli-p", setter("statistics", value={"models": {"A": {"kind": "bernoulli", "p": 2}}}),
     "statistics.models.A.p", "p in [0, 1]"),
    ("csv-without-columns", setter("source", value={"format": "csv", "header": False,
                                                    "type_column": "t"}),
     "source", "needs \"columns\""),
    ("source-type-and-column", setter("source", value={"format": "parquet", "type": "A",
                                                       "type_column": "t"}),
     "source", "exactly one of"),
    ("dunder-attribute", setter("patterns", 0, "where", 0, value="a.__class__ == b.price"),
     "patterns[0].where[0]", "names beginning with '__' are not allowed"),
    ("two-negated-in-one-predicate", lambda d: d["patterns"].__setitem__(0, {
        "name": "p", "structure": ["SEQ", "a:A", ["NOT", "b:B"], ["NOT", "n:B"], "c:C"],
        "within": 5, "where": ["b.price < n.price"]}), "patterns[0].where[0]",
     "one negated variable only, not b, n"),
    ("kleene-without-window", lambda d: d["patterns"].__setitem__(0, {
        "name": "p", "structure": ["SEQ", ["KLEENE", "b:B"]]}), "patterns[0]",
     "needs a window"),
    ("emit-negated", lambda d: d["patterns"].__setitem__(0, {
        "name": "p", "structure": ["SEQ", "a:A", ["NOT", "b:B"], "c:C"], "within": 5,
        "emit": {"v": "b.price"}}), "patterns[0].emit.v", "'b' is negated"),
]


@pytest.mark.parametrize(("case", "change", "path", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_malformed_workload_names_path_and_problem(case, change, path, fragment):
    with pytest.raises(InputError) as info:
        build_workload(mutate(change), file="w.json")
    problems = info.value.problems
    matching = [p for p in problems if p.path == path and fragment in p.message]
    assert matching, f"expected {path!r}: ...{fragment}...; got {[p.render() for p in problems]}"
    assert all(p.file == "w.json" for p in problems)


def test_base_workload_is_valid():
    workload = build_workload(copy.deepcopy(BASE))
    assert [p.name for p in workload.patterns] == ["p", "q"]


def test_cli_exit_code_2_for_each_malformed_case(tmp_path):
    runner = CliRunner()
    for case, change, path, fragment in CASES:
        file = tmp_path / f"{case}.json"
        file.write_text(json.dumps(mutate(change)))
        result = runner.invoke(app, ["validate", str(file)])
        assert result.exit_code == 2, case
        where = f"{file}: {path}: " if path else f"{file}: "
        assert where in result.stderr, case
        assert fragment in result.stderr, case
        assert "Traceback" not in result.output


def test_not_json_reports_line_and_column(tmp_path):
    file = tmp_path / "broken.json"
    file.write_text('{"format": "cepplan.workload/1",\n  "time_unit": s}')
    with pytest.raises(InputError) as info:
        load_workload(file)
    assert "not valid JSON at line 2, column 16" in info.value.problems[0].message


def test_not_an_object():
    with pytest.raises(InputError, match="must be a JSON object"):
        build_workload([1, 2, 3])


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_workload(tmp_path / "absent.json")


def test_several_errors_reported_together():
    def change(doc):
        pattern(doc, 0)["where"] = ["a.prize < 1", "b.price <"]
        pattern(doc, 0)["within"] = "0s"
        doc["statistics"] = {"rates": {"A": -2}}
    with pytest.raises(InputError) as info:
        build_workload(mutate(change), file="w.json")
    paths = sorted(p.path for p in info.value.problems)
    assert paths == ["patterns[0].where[0]", "patterns[0].where[1]", "patterns[0].within",
                     "statistics.rates.A"]


def test_predicate_error_shows_caret_under_offending_character():
    with pytest.raises(InputError) as info:
        build_workload(mutate(setter("patterns", 0, "where", 0, value="a.price < b.prize")))
    problem = info.value.problems[0]
    text_line, caret_line = problem.excerpt.splitlines()
    assert text_line == "a.price < b.prize"
    assert caret_line.index("^") == text_line.index("b.prize")


def test_cli_reports_problem_without_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(mutate(setter("time_unit", value="week"))))
    good = str(Path("examples/stocks/workload.json"))
    result = CliRunner().invoke(app, ["validate", str(bad), good])
    assert result.exit_code == 2
    assert "ok: examples/stocks/workload.json" in result.stdout
    assert "1 of 2 workloads invalid" in result.stderr


def test_pattern_binding_an_invalid_pattern_reports_only_the_root_cause():
    change = setter("patterns", 0, "where", 0, value="a.prize < b.price")  # q binds p as y
    with pytest.raises(InputError) as info:
        build_workload(mutate(change), file="w.json")
    assert [p.path for p in info.value.problems] == ["patterns[0].where[0]"]
