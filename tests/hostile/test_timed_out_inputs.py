"""`"timed_out": true` where a pattern cannot have timed-out partial matches: one error line
naming the pattern and the key, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

CASES = [  # (changes to the first pattern, place, what the error says)
    ({"structure": ["SEQ", "w:Withdrawal"], "where": ["w.amount > 500"]},
     "patterns[0].timed_out", "binds one event"),
    ({"structure": ["AND", "r:PasswordReset", "l:Login"], "where": []},
     "patterns[0].timed_out", "AND patterns have none"),
    ({"structure": ["OR", "r:PasswordReset", "l:Login"], "where": []},
     "patterns[0].timed_out", "OR patterns have none"),
    ({"structure": ["SEQ", "r:PasswordReset", ["KLEENE", "l:Login"], "w:Withdrawal"]},
     "patterns[0].timed_out", "l (KLEENE)"),
    ({"structure": ["SEQ", "r:PasswordReset", ["OPTIONAL", "l:Login"], "w:Withdrawal"]},
     "patterns[0].timed_out", "l (OPTIONAL)"),
    ({"structure": ["SEQ", "r:PasswordReset", "l:Login|Swipe", "w:Withdrawal"],
      "where": ["w.amount > 500"]},
     "patterns[0].timed_out", "l (alternatives)"),
    ({"structure": ["SEQ", "r:PasswordReset", ["NOT", "l:Login"], "w:Withdrawal"],
      "where": ["w.amount > 500"]},
     "patterns[0].timed_out", "NOT operands (l)"),
    ({"strategy": "next"}, "patterns[0].timed_out", "strategy \"any\" only"),
    ({"strategy": {"w": "strict"}}, "patterns[0].timed_out", "strategy \"any\" only"),
    ({"timed_out": "yes"}, "patterns[0].timed_out", "boolean"),
    ({"within": "20 events"}, "patterns[0].timed_out", "need a time window"),
]


@pytest.mark.parametrize(("changes", "place", "fragment"), CASES, ids=[c[2] for c in CASES])
def test_timed_out_refused(cli, fraud, changes, place, fragment):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0].update({"timed_out": True} | changes)
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: {place}: ", fragment)


def test_a_hidden_pattern_name_already_taken(cli, fraud):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0]["timed_out"] = True
    workload["patterns"].append({"name": "account_takeover__timed_out_2",
                                 "structure": ["SEQ", "s:Swipe"]})
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].timed_out: ",
                                    "'account_takeover__timed_out_2'")


def test_contexts_are_refused(cli, fraud):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0]["timed_out"] = True
    workload["contexts"] = {"initial": "normal",
                            "types": {"normal": {"patterns": ["account_takeover"]}}}
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].timed_out: ", "contexts")


@pytest.mark.parametrize("follow", [False, True])
def test_parquet_output_is_refused(cli, fraud, follow):
    """A batch run and a live stream alike: before anything runs."""
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0]["timed_out"] = True
    path.write_text(json.dumps(workload))
    plan, out = fraud / "plan.json", fraud / "out"
    assert cli("optimize", path, "-o", plan, "-q").code == 0
    (fraud / "in").mkdir()
    events = ("--follow", fraud / "in") if follow else (fraud / "events.csv",)
    result = cli("run", plan, *events, "-o", out, "--format", "parquet", "-q")
    result.one_error(f"{path}: patterns[0].timed_out: ", "JSON lines only")
    assert not out.exists()
