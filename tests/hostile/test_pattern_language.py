"""Alternatives (`"x:A|B"`), optional variables and KLEENE bounds a pattern cannot have: one
error line naming the pattern and the key, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

SEVEN = ["SEQ", *(f"v{i}:Login|Swipe" for i in range(7))]  # 2^7 combinations


KEEP = None  # the pattern's own `where`

CASES = [  # (structure, where, place, what the error says)
    (["SEQ", "r:PasswordReset", "l:Login|Login", "w:Withdrawal"], KEEP,
     "patterns[0].structure[2]", "distinct type names"),
    (["SEQ", "r:PasswordReset", "l:Login|Nope", "w:Withdrawal"], KEEP,
     "patterns[0].structure[2]", "must be primitive event types, not 'Nope'"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login|Swipe"], "w:Withdrawal"], KEEP,
     "patterns[0].structure[2][1]", "KLEENE takes a single type"),
    (["SEQ", "r:PasswordReset", ["NOT", "l:Login|Swipe"], "w:Withdrawal"], KEEP,
     "patterns[0].structure[2][1]", "NOT takes a single type"),
    (["OR", "l:Login|Swipe", "w:Withdrawal"], [],
     "patterns[0].structure[1]", "alternation inside OR"),
    (["SEQ", "r:PasswordReset", "l:Login", "w:Withdrawal|Login"], KEEP,
     "patterns[0].where[1]", "amount"),
    (SEVEN, [], "patterns[0].structure", "128 core patterns"),
    (["SEQ", ["OPTIONAL", "r:PasswordReset"], ["NOT", "l:Login"]], [],
     "patterns[0].structure", "a match cannot be empty"),
    (["OR", ["OPTIONAL", "r:PasswordReset"], "l:Login"], [],
     "patterns[0].structure[1]", "OPTIONAL inside OR"),
    (["SEQ", "r:PasswordReset", ["OPTIONAL", ["KLEENE", "l:Login"]]], [],
     "patterns[0].structure[2]", "OPTIONAL applies to a single"),
    (["OPTIONAL", "r:PasswordReset"], [],
     "patterns[0].structure[0]", "OPTIONAL cannot be the whole pattern"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login", {"min": 0, "max": 0}]], [],
     "patterns[0].structure[2][2].max", "binds no event"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login", {"min": 3, "max": 2}]], [],
     "patterns[0].structure[2][2].max", "max 2 is below min 3"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login", {"min": 1.5}]], [],
     "patterns[0].structure[2][2].min", "whole number"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login", {"min": -1}]], [],
     "patterns[0].structure[2][2].min", "whole number from 0"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login", {"least": 2}]], [],
     "patterns[0].structure[2][2]", "{\"min\": n, \"max\": m}"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login", 2, 3]], [],
     "patterns[0].structure[2]", "KLEENE takes exactly one operand and optionally its bounds"),
    (["SEQ", ["KLEENE", "l:Login", {"min": 0}]], [],
     "patterns[0].structure", "a match cannot be empty"),
    (["OR", "r:PasswordReset", ["KLEENE", "l:Login", {"min": 0}]], [],
     "patterns[0].structure[2]", "min 0 is optional"),
]


@pytest.mark.parametrize(("structure", "where", "place", "fragment"), CASES,
                         ids=[c[3] for c in CASES])
def test_construct_refused(cli, fraud, structure, where, place, fragment):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0]["structure"] = structure
    if where is not KEEP:
        workload["patterns"][0]["where"] = where
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




def test_optional_pattern_cannot_emit(cli, fraud):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0].update(
        structure=["SEQ", "r:PasswordReset", ["OPTIONAL", "l:Login"], "w:Withdrawal"],
        emit={"amount": "w.amount"})
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].emit: ", "nothing to emit")
