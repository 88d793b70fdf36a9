"""Count windows (`"within": "N events"`) that cannot be read or combined: one error line
naming the pattern and the key, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

WINDOWS = [  # (within, what the error says)
    ("0 events", "whole number of events from 1 to 1000000"),
    ("-3 events", "whole number of events from 1 to 1000000"),
    ("1.5 events", "whole number of events from 1 to 1000000"),
    ("2000000 events", "more than the largest count window, 1000000 events"),
    ("events", "write a whole number of events"),
]


def _with(fraud, **changes) -> tuple:
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0].update(changes)
    path.write_text(json.dumps(workload))
    return path, workload


@pytest.mark.parametrize(("within", "fragment"), WINDOWS, ids=[w for w, _ in WINDOWS])
def test_count_window_refused(cli, fraud, within, fragment):
    path, _ = _with(fraud, within=within)
    cli("validate", path).one_error(f"{path}: patterns[0].within: ", fragment)


@pytest.mark.parametrize(("structure", "fragment"), [
    (["SEQ", ["NOT", "r:PasswordReset"], "l:Login", "w:Withdrawal"], "between two positive"),
    (["SEQ", "l:Login", "w:Withdrawal", ["NOT", "r:PasswordReset"]], "between two positive"),
    (["AND", "l:Login", ["NOT", "r:PasswordReset"], "w:Withdrawal"], "between two positive"),
    (["SEQ", "l:Login", ["NOT", "r:PasswordReset"], ["OPTIONAL", "w:Withdrawal"]],
     "every match binds"),
    (["SEQ", "l:Login", ["NOT", "r:PasswordReset"], ["KLEENE", "w:Withdrawal", {"min": 0}]],
     "every match binds"),
])
def test_negation_at_the_edge_refused(cli, fraud, structure, fragment):
    path, _ = _with(fraud, within="20 events", structure=structure, where=["w.amount > 500"])
    cli("validate", path).one_error(f"{path}: patterns[0].within: ", fragment)


def test_contexts_refused(cli, fraud):
    path, workload = _with(fraud, within="20 events")
    workload["contexts"] = {"partition_by": ["user"], "initial": "normal",
                            "types": {"normal": {"patterns": ["account_takeover"]}}}
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].within: ", "contexts")


def test_a_count_window_pattern_cannot_be_bound(cli, fraud):
    path, workload = _with(fraud, within="20 events")
    workload["patterns"].append({"name": "after", "within": "5min", "partition_by": ["user"],
                                 "structure": ["SEQ", "t:account_takeover", "s:Swipe"]})
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[3].structure[1]: ",
                                    "has a count window", "cannot bind it")


def test_emit_refused(cli, fraud):
    path, _ = _with(fraud, within="20 events", emit={"amount": "w.amount"})
    cli("validate", path).one_error(f"{path}: patterns[0].within: ", "drop \"emit\"")


def test_generate_streaming_accepts_a_count_window(cli, fraud):
    """A live stream numbers the positions as its watermark passes the events
    (tests/engine/test_stream_count_windows.py): the streaming job is written."""
    path, _ = _with(fraud, within="20 events")
    plan, out = fraud / "plan.json", fraud / "out"
    assert cli("optimize", path, "-o", plan, "-q").code == 0
    assert cli("generate", plan, "--streaming", "-o", out, "-q").code == 0
    written = json.loads((out / "job.json").read_text())["patterns"]
    assert {p["name"]: p.get("window_events") for p in written}["account_takeover"] == 20
