"""After-match skips a pattern cannot have, and the outputs and runs that cannot apply one:
one error line naming the file, the pattern and the key, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

SEQ = ["SEQ", "r:PasswordReset", "l:Login", "w:Withdrawal"]

CASES = [  # (structure, after_match, what the error says)
    (SEQ, {"to_first": "x"}, "'x' is not a variable of this pattern"),
    (SEQ, {"to_last": "r"}, "may bind the match's first event"),
    (["SEQ", ["OPTIONAL", "r:PasswordReset"], "l:Login", "w:Withdrawal"], {"to_first": "l"},
     "may bind the match's first event"),
    (["SEQ", "r:PasswordReset", ["OPTIONAL", "l:Login"], "w:Withdrawal"], {"to_first": "l"},
     "'l' is optional"),
    (["SEQ", "r:PasswordReset", ["KLEENE", "l:Login", {"min": 0}], "w:Withdrawal"],
     {"to_last": "l"}, "KLEENE with min 0"),
    (["SEQ", "r:PasswordReset", ["NOT", "l:Login"], "w:Withdrawal"], {"to_first": "l"},
     "'l' is negated"),
    (["AND", "r:PasswordReset", "l:Login", "w:Withdrawal"], {"to_last": "w"}, "needs a SEQ"),
]


def test_skip_with_timed_out_refused(cli, fraud):
    path, workload = _with(fraud, SEQ, "past_last_event")
    workload["patterns"][0]["timed_out"] = True
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].after_match: ", "timed_out")


def _with(fraud, structure, after_match):
    path = fraud / "workload.json"
    workload = json.loads(path.read_text())
    workload["patterns"][0].update(structure=structure, after_match=after_match)
    path.write_text(json.dumps(workload))
    return path, workload


@pytest.mark.parametrize(("structure", "after_match", "fragment"), CASES,
                         ids=[c[2] for c in CASES])
def test_skip_refused(cli, fraud, structure, after_match, fragment):
    path, _ = _with(fraud, structure, after_match)
    cli("validate", path).one_error(f"{path}: patterns[0].after_match: ", fragment)


def test_unknown_skip_is_a_shape_error(cli, fraud):
    path, _ = _with(fraud, SEQ, "to_next_row")
    cli("validate", path).one_error(f"{path}: patterns[0].after_match: ")


def test_a_skipped_pattern_cannot_be_bound(cli, fraud):
    path, workload = _with(fraud, SEQ, "past_last_event")
    workload["patterns"][0]["emit"] = {"amount": "w.amount", "user": "w.user"}
    workload["patterns"].append({"name": "higher", "within": "5min", "partition_by": ["user"],
                                 "structure": ["SEQ", "t:account_takeover", "s:Swipe"]})
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[3].structure[1]: ",
                                    "has an after_match skip")


def test_parquet_output_cannot_skip(cli, fraud):
    """Parquet output: refused before any work, `--output` not made."""
    path, _ = _with(fraud, SEQ, "past_last_event")
    plan, out = fraud / "plan.json", fraud / "out"
    assert cli("optimize", path, "-o", plan, "-q").code == 0
    result = cli("run", plan, fraud / "events.csv", "-o", out, "--format", "parquet", "-q")
    result.one_error(f"{path}: patterns[0].after_match: ", "JSON lines only")
    assert not out.exists()


def test_a_generated_stream_job_skips(cli, fraud):
    """`cepplan generate --streaming` (the Spark stream) writes the job with the skip, which
    its stateful step applies (tests/engine/test_spark_stream_after_match.py)."""
    path, _ = _with(fraud, SEQ, {"to_last": "w"})
    plan, out = fraud / "plan.json", fraud / "job"
    assert cli("optimize", path, "-o", plan, "-q").code == 0
    assert cli("generate", plan, "-o", out, "--streaming", "-q").code == 0
    assert json.loads((out / "job.json").read_text())["after_match"]["account_takeover"][
        "kind"] == "to_last"


@pytest.mark.parametrize(("structure", "after_match", "prefer", "place", "fragment"), [
    (SEQ, "any", "greedy", "prefer", "add \"after_match\""),
    (["AND", "r:PasswordReset", "l:Login", "w:Withdrawal"], "to_next_event", "reluctant",
     "prefer", "it needs a SEQ, not AND"),
    (SEQ, "past_last_event", "eager", "prefer", ""),
])
def test_preference_refused(cli, fraud, structure, after_match, prefer, place, fragment):
    path, workload = _with(fraud, structure, after_match)
    workload["patterns"][0]["prefer"] = prefer
    path.write_text(json.dumps(workload))
    cli("validate", path).one_error(f"{path}: patterns[0].{place}: ", fragment)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_stream_cannot_prefer(cli, fraud, engine):
    """`run --follow` on either engine: a preference needs every match from a first event,
    which a stream cannot wait for; refused before any work, `--output` not made."""
    path, workload = _with(fraud, SEQ, "past_last_event")
    workload["patterns"][0]["prefer"] = "greedy"
    path.write_text(json.dumps(workload))
    plan, out, followed = fraud / "plan.json", fraud / "out", fraud / "followed"
    followed.mkdir()
    assert cli("optimize", path, "-o", plan, "-q").code == 0
    cli("run", plan, "-o", out, "--follow", followed, "--engine", engine, "-q").one_error(
        f"{plan}: patterns.account_takeover: ", "prefer is applied to event files only")
    assert not out.exists()


def test_a_generated_stream_job_cannot_prefer(cli, fraud):
    """`cepplan generate --streaming`: the preference refused like `run --follow`, the job
    directory not made."""
    path, workload = _with(fraud, SEQ, "to_next_event")
    workload["patterns"][0]["prefer"] = "reluctant"
    path.write_text(json.dumps(workload))
    plan, out = fraud / "plan.json", fraud / "job"
    assert cli("optimize", path, "-o", plan, "-q").code == 0
    cli("generate", plan, "-o", out, "--streaming").one_error(
        f"{plan}: patterns.account_takeover: ", "prefer is applied to event files only")
    assert not out.exists()
