"""Bad context models: errors name the JSON path and exit 2 without a traceback; warnings say
what will happen and leave the workload valid."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from cepplan.cli.app import app
from tests.contexts.context_workloads import CONTEXTS, PATTERNS

BASE = {"format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"v": "long", "k": "string"}} for t in "ABC"},
        "patterns": PATTERNS, "contexts": CONTEXTS}


def _validate(tmp_path, change):
    raw = copy.deepcopy(BASE)
    change(raw)
    path = tmp_path / "w.json"
    path.write_text(json.dumps(raw))
    return CliRunner().invoke(app, ["validate", str(path)])


def _transition(index, **fields):
    def change(raw):
        raw["contexts"]["transitions"][index] = fields
    return change


ERRORS = {
    "unknown deriving pattern": (
        _transition(0, on="nope", action="switch", **{"from": "idle", "to": "busy"}),
        "contexts.transitions[0].on: unknown pattern 'nope'"),
    "unknown context": (
        _transition(2, on="alert", action="initiate", context="storm"),
        "contexts.transitions[2].context: unknown context type 'storm'"),
    "switch from a context that cannot hold": (
        _transition(0, on="rise", action="switch", **{"from": "alarm", "to": "busy"}),
        "contexts.transitions[1].from: switch from 'busy', which can never hold"),
    "switch to itself": (
        _transition(1, on="fall", action="switch", **{"from": "busy", "to": "busy"}),
        "contexts.transitions[1]: switch from 'busy' to itself"),
    "unknown pattern listed in a type": (
        lambda raw: raw["contexts"]["types"]["idle"]["patterns"].append("ghost"),
        "contexts.types.idle.patterns[3]: unknown pattern 'ghost'"),
    "pattern not partitioned like its contexts": (
        lambda raw: raw["patterns"][5].pop("partition_by"),
        "patterns[5].partition_by: pattern 'both' takes part in contexts held per k"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_bad_context_models_exit_2_with_the_json_path(tmp_path, case):
    change, message = ERRORS[case]
    result = _validate(tmp_path, change)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_warnings_say_what_happens(tmp_path):
    def change(raw):
        raw["patterns"] = [*raw["patterns"], {"name": "free", "structure": ["SEQ", "a:A"],
                                              "partition_by": ["k"], "within": 1}]
        raw["contexts"]["types"]["stuck"] = {"patterns": []}
        raw["contexts"]["transitions"].append({"on": "calm", "action": "initiate",
                                               "context": "stuck"})
    result = _validate(tmp_path, change)
    assert result.exit_code == 0, result.output
    assert "patterns[8]: pattern 'free' is in no context: it runs all the time" \
        in result.output
    assert "contexts.types.stuck: context 'stuck' never ends once it holds" in result.output
