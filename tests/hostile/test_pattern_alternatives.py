"""Alternatives (`"x:A|B"`) a pattern cannot have: one error line naming the pattern and the
key, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

SEVEN = ["SEQ", *(f"v{i}:Login|Swipe" for i in range(7))]  # 2^7 combinations


def _edit(pattern: dict, **changes) -> dict:
    return {**pattern, **changes}


CASES = [
    (lambda p: _edit(p, structure=["SEQ", "r:PasswordReset", "l:Login|Login", "w:Withdrawal"]),
     "patterns[0].structure[2]", "distinct type names"),
    (lambda p: _edit(p, structure=["SEQ", "r:PasswordReset", "l:Login|Nope", "w:Withdrawal"]),
     "patterns[0].structure[2]", "must be primitive event types, not 'Nope'"),
    (lambda p: _edit(p, structure=["SEQ", "r:PasswordReset", ["KLEENE", "l:Login|Swipe"],
                                   "w:Withdrawal"]),
     "patterns[0].structure[2][1]", "KLEENE takes a single type"),
    (lambda p: _edit(p, structure=["SEQ", "r:PasswordReset", ["NOT", "l:Login|Swipe"],
                                   "w:Withdrawal"]),
     "patterns[0].structure[2][1]", "NOT takes a single type"),
    (lambda p: _edit(p, structure=["OR", "l:Login|Swipe", "w:Withdrawal"], where=[]),
     "patterns[0].structure[1]", "alternation inside OR"),
    (lambda p: _edit(p, structure=["SEQ", "r:PasswordReset", "l:Login", "w:Withdrawal|Login"]),
     "patterns[0].where[1]", "amount"),
    (lambda p: _edit(p, structure=SEVEN, where=[]),
     "patterns[0].structure", "128 core patterns"),
]


@pytest.mark.parametrize(("change", "place", "fragment"), CASES,
                         ids=[c[2] for c in CASES])
def test_alternatives_refused(cli, fraud, change, place, fragment):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0] = change(workload["patterns"][0])
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: {place}: ", fragment)


def _alternating(fraud, *extra: dict) -> tuple:
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0]["structure"] = ["SEQ", "r:PasswordReset", "l:Login",
                                            "w:Withdrawal|Swipe"]
    workload["patterns"] += list(extra)
    path.write_text(json.dumps(workload))
    return path, workload


def test_a_pattern_with_alternatives_cannot_be_bound(cli, fraud):
    path, _ = _alternating(fraud, {"name": "higher", "within": "5min",
                                   "structure": ["SEQ", "t:account_takeover", "s:Swipe"]})
    cli("validate", path).one_error(f"{path}: patterns[3].structure[1]: ",
                                    "another pattern cannot bind it")


def test_a_core_pattern_name_already_taken(cli, fraud):
    path, _ = _alternating(fraud, {"name": "account_takeover__w_Swipe",
                                   "structure": ["SEQ", "s:Swipe"]})
    cli("validate", path).one_error(f"{path}: patterns[0].name: ",
                                    "'account_takeover__w_Swipe'")


def test_contexts_are_refused(cli, fraud):
    path, workload = _alternating(fraud)
    workload["contexts"] = {"initial": "normal",
                            "types": {"normal": {"patterns": ["account_takeover"]}}}
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].structure: ", "contexts")


def test_parquet_output_is_refused(cli, fraud):
    path, _ = _alternating(fraud)
    plan, out = fraud / "plan.json", fraud / "out"
    assert cli("optimize", path, "-o", plan, "-q").code == 0
    result = cli("run", plan, fraud / "events.csv", "-o", out, "--format", "parquet", "-q")
    result.one_error(f"{path}: patterns[0].structure: ", "JSON lines only")
    assert not out.exists()


OPTIONAL_CASES = [
    (["SEQ", ["OPTIONAL", "r:PasswordReset"], ["NOT", "l:Login"]],
     "patterns[0].structure", "a match cannot be empty"),
    (["OR", ["OPTIONAL", "r:PasswordReset"], "l:Login"],
     "patterns[0].structure[1]", "OPTIONAL inside OR"),
    (["SEQ", "r:PasswordReset", ["OPTIONAL", ["KLEENE", "l:Login"]]],
     "patterns[0].structure[2]", "OPTIONAL applies to a single"),
    (["OPTIONAL", "r:PasswordReset"], "patterns[0].structure[0]",
     "OPTIONAL cannot be the whole pattern"),
]


@pytest.mark.parametrize(("structure", "place", "fragment"), OPTIONAL_CASES,
                         ids=[c[2] for c in OPTIONAL_CASES])
def test_optional_refused(cli, fraud, structure, place, fragment):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0].update(structure=structure, where=[])
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: {place}: ", fragment)


def test_optional_pattern_cannot_emit(cli, fraud):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0].update(
        structure=["SEQ", "r:PasswordReset", ["OPTIONAL", "l:Login"], "w:Withdrawal"],
        emit={"amount": "w.amount"})
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].emit: ", "nothing to emit")
