"""Plans and statistics tied to what they were made for, never silently wrong.

A plan records the digest of its workload's content (`workload.sha256`) and of its own planned
content (`plan_sha256`). Run, generate and cover refuse a plan that records no workload or
another one; a plan edited since it was planned runs as written, without the modelled costs
that belong to its original steps, and says so. The workload digest is taken over the
workload's canonical JSON, so the same workload reformatted (or sent to the service) still
fits its plans and statistics; plans and statistics of earlier versions, which recorded the
digest of the file's bytes, still fit the file they were made for."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.workload import load_workload
from tests.hostile.conftest import EXAMPLES
from tests.hostile_workloads import example


def planned(cli, workload: Path, out: Path, *extra) -> dict:
    assert cli("optimize", workload, "-o", out, "-q", "--time-limit", "5", *extra).code == 0
    return json.loads(out.read_text())


def written(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document))
    return path


def run_metrics(cli, plan: Path, events: Path, out: Path, *extra):
    """The run's outcome and its metrics.json (None when it failed)."""
    outcome = cli("run", plan, events, "-o", out, *extra)
    metrics = json.loads((out / "metrics.json").read_text()) if outcome.code == 0 else None
    return outcome, metrics


def warnings(outcome) -> list[str]:
    return [line for line in outcome.err.splitlines() if line.startswith("warning:")]


# -- plans edited after planning ----------------------------------------------------------------

def _other_steps(doc: dict) -> dict:
    """account_takeover's steps changed to one step watching everything (a valid plan)."""
    body = doc["patterns"]["account_takeover"]["detection"]
    assert body["steps"] != [["l", "r", "w"]]
    body["steps"] = [["l", "r", "w"]]
    return doc


def _cost_only(doc: dict) -> dict:
    doc["patterns"]["card_testing"]["detection"]["expected_cost"] = 1e-9
    return doc


@pytest.mark.parametrize("edit", [_other_steps, _cost_only], ids=["steps", "cost"])
def test_edited_plan_runs_without_the_costs_modelled_for_its_original(cli, fraud, tmp_path,
                                                                      edit):
    """The issue: edited steps ran with the old plan's modelled cost printed beside them."""
    doc = planned(cli, fraud / "workload.json", tmp_path / "plan.json")
    original, original_metrics = run_metrics(cli, tmp_path / "plan.json", fraud / "events.csv",
                                             tmp_path / "original")
    assert original.code == 0 and not warnings(original)
    predicted = original_metrics["plan"]["predicted"]
    for name, body in doc["patterns"].items():  # the unedited plan shows its own costs
        assert predicted[name]["expected_cost"] == body["detection"]["expected_cost"]
    edited = written(tmp_path / "edited.json", edit(copy.deepcopy(doc)))
    outcome, metrics = run_metrics(cli, edited, fraud / "events.csv", tmp_path / "edited")
    assert outcome.code == 0, outcome.err
    [line] = warnings(outcome)
    assert str(edited) in line and "changed after" in line and "without the modelled" in line
    for name, figures in metrics["plan"]["predicted"].items():
        assert figures["expected_cost"] is None and figures["naive_cost"] is None, name
    assert "total_expected_cost" not in metrics["plan"]["provenance"]
    assert metrics["matches"] == original_metrics["matches"]  # plans change cost, not results


def test_edited_plan_generates_a_job_without_modelled_costs(cli, fraud, tmp_path):
    doc = planned(cli, fraud / "workload.json", tmp_path / "plan.json")
    edited = written(tmp_path / "edited.json", _other_steps(doc))
    outcome = cli("generate", edited, "-o", tmp_path / "job")
    assert outcome.code == 0 and "changed after" in warnings(outcome)[0]
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    assert all(p["expected_cost"] is None for p in job["plan"]["predicted"].values())


def test_edited_contexts_section_drops_the_planned_active_shares(cli, tmp_path):
    """Sibling in the contexts section: the shares the plan expected are not shown."""
    workload = EXAMPLES / "traffic" / "workload.json"
    doc = planned(cli, workload, tmp_path / "plan.json", "--search", "none")
    doc["contexts"]["expected_active_share"] = dict.fromkeys(
        doc["contexts"]["expected_active_share"], 0.5)
    edited = written(tmp_path / "edited.json", doc)
    outcome, metrics = run_metrics(cli, edited, EXAMPLES / "traffic" / "events.csv",
                                   tmp_path / "out", "-w", workload)
    assert outcome.code == 0 and len(warnings(outcome)) == 1
    assert all(p["expected_active_share"] is None
               for p in metrics["contexts"]["patterns"].values())


def test_edited_sharing_section_drops_the_shared_nodes_modelled_costs(cli, tmp_path):
    """Sibling in the sharing section: each shared subtree's modelled partial matches."""
    workload = EXAMPLES / "trading_rules" / "workload.json"
    doc = planned(cli, workload, tmp_path / "plan.json", "--time-limit", "2")
    assert doc["sharing"]["shared"], "the example shares subtrees"
    doc["sharing"]["shared"][0]["cost"] *= 10
    edited = written(tmp_path / "edited.json", doc)
    outcome, metrics = run_metrics(cli, edited, EXAMPLES / "trading_rules" / "events.csv",
                                   tmp_path / "out", "-w", workload)
    assert outcome.code == 0
    assert [w for w in warnings(outcome) if "changed after" in w] == warnings(outcome)[:1]
    nodes = metrics["shared_nodes"]
    assert nodes and all(n["modelled_per_window"] is None for n in nodes)


def test_edited_covering_plan_warns_in_cover(cli, tmp_path):
    workload = EXAMPLES / "mobile" / "workload.json"
    doc = planned(cli, workload, tmp_path / "plan.json", "--search", "none")
    doc["patterns"]["hard_braking"]["detection"]["expected_cost"] = 0.0
    edited = written(tmp_path / "edited.json", doc)
    outcome = cli("cover", edited, EXAMPLES / "mobile" / "events.jsonl", "-o", tmp_path / "out",
                  "-w", workload)
    assert outcome.code == 0 and "changed after" in warnings(outcome)[0]


def test_plan_without_its_content_digest_runs_without_modelled_costs(cli, fraud, tmp_path):
    """A plan written before plans recorded `plan_sha256` cannot be checked: it runs, warned."""
    doc = planned(cli, fraud / "workload.json", tmp_path / "plan.json")
    del doc["plan_sha256"]
    older = written(tmp_path / "older.json", doc)
    outcome, metrics = run_metrics(cli, older, fraud / "events.csv", tmp_path / "out")
    assert outcome.code == 0
    [line] = warnings(outcome)
    assert "records no digest" in line and "plan_sha256" in line
    assert all(p["expected_cost"] is None for p in metrics["plan"]["predicted"].values())


# -- the workload a plan was made for ------------------------------------------------------------

@pytest.mark.parametrize("sha256", [None, ""], ids=["missing", "empty"])
@pytest.mark.parametrize("command", ["run", "generate", "cover"])
def test_plan_without_its_workload_digest_refused(cli, tmp_path, sha256, command):
    """The issue: a plan without `workload.sha256` skipped the check."""
    folder = EXAMPLES / "mobile"
    doc = planned(cli, folder / "workload.json", tmp_path / "plan.json", "--search", "none")
    if sha256 is None:
        del doc["workload"]["sha256"]
    else:
        doc["workload"]["sha256"] = sha256
    plan = written(tmp_path / "bare.json", doc)
    out = tmp_path / "out"
    args = [plan, *([] if command == "generate" else [folder / "events.jsonl"])]
    cli(command, *args, "-o", out, "-w", folder / "workload.json").one_error(
        f"{plan}: workload.sha256", "does not record the workload")
    assert not out.exists()
    if command == "run":  # the way out the error names
        assert cli(command, *args, "-o", out, "-w", folder / "workload.json",
                   "--plan-kind", "trivial").code == 0


def test_plan_runs_on_its_workload_reformatted(cli, fraud, tmp_path):
    """The digest is of the content: indented, keys reordered, non-ASCII escaped — the same
    workload, the same plan (it was refused as "another version")."""
    doc = planned(cli, fraud / "workload.json", tmp_path / "plan.json")
    raw = json.loads((fraud / "workload.json").read_text())
    again = tmp_path / "reformatted.json"
    again.write_text(json.dumps(dict(reversed(raw.items())), indent=7, ensure_ascii=True))
    outcome, _ = run_metrics(cli, tmp_path / "plan.json", fraud / "events.csv",
                             tmp_path / "out", "-w", again)
    assert outcome.code == 0 and not warnings(outcome), outcome.err
    raw["patterns"][0]["within"] = "7min"
    again.write_text(json.dumps(raw))
    cli("run", tmp_path / "plan.json", fraud / "events.csv", "-o", tmp_path / "out2", "-w",
        again).one_error("workload.sha256", "another version")
    assert doc["workload"]["sha256"] == load_workload(fraud / "workload.json").digest
    # plans of earlier versions recorded the sha256 of the workload file's bytes: still fit
    doc["workload"]["sha256"] = hashlib.sha256((fraud / "workload.json").read_bytes()).hexdigest()
    older = written(tmp_path / "older.json", doc)
    outcome, _ = run_metrics(cli, older, fraud / "events.csv", tmp_path / "out3")
    assert outcome.code == 0 and not warnings(outcome), outcome.err


# -- statistics -------------------------------------------------------------------------------

def test_statistics_fit_their_workload_reformatted_and_older_files_still_fit(cli, fraud,
                                                                              tmp_path):
    stats = tmp_path / "stats.json"
    assert cli("stats", fraud / "events.csv", "-w", fraud / "workload.json", "-o", stats,
               "-q", "--engine", "local").code == 0
    document = json.loads(stats.read_text())
    raw = json.loads((fraud / "workload.json").read_text())
    again = written(tmp_path / "reformatted.json", dict(reversed(raw.items())))
    assert cli("optimize", again, "--stats", stats, "-o", tmp_path / "p.json", "-q").code == 0
    document["workload_digest"] = hashlib.sha256(
        (fraud / "workload.json").read_bytes()).hexdigest()
    older = written(tmp_path / "older.json", document)
    assert cli("optimize", fraud / "workload.json", "--stats", older, "-o",
               tmp_path / "q.json", "-q").code == 0
    cli("optimize", again, "--stats", older, "-o", tmp_path / "r.json").one_error(
        "workload_digest", "another workload")


KEYS = st.lists(st.integers(0, 10**6), min_size=1, max_size=40)


@settings(max_examples=40,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=KEYS, indent=st.sampled_from([None, 0, 2, 9]), ascii_only=st.booleans())
def test_content_digest_ignores_formatting_and_sees_every_change(tmp_path, order, indent,
                                                                 ascii_only):
    """Any order of keys, any indentation, escaped or raw Unicode: one digest; a value
    changed anywhere: another."""
    raw = example("traffic")
    raw["name"] = "trafic routier: ☃ é"

    def shuffled(value, depth=0):
        if isinstance(value, dict):
            items = list(value.items())
            pick = order[depth % len(order)]
            items = items[pick % max(len(items), 1):] + items[:pick % max(len(items), 1)]
            return {k: shuffled(v, depth + 1) for k, v in items}
        if isinstance(value, list):
            return [shuffled(v, depth + 1) for v in value]
        return value

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(raw))
    second.write_text(json.dumps(shuffled(raw), indent=indent, ensure_ascii=ascii_only))
    assert load_workload(first).digest == load_workload(second).digest
    changed = copy.deepcopy(raw)
    changed["patterns"][order[0] % len(changed["patterns"])]["within"] = "17s"
    second.write_text(json.dumps(changed))
    assert load_workload(first).digest != load_workload(second).digest


def test_whole_numbers_written_as_floats_keep_the_digest(tmp_path):
    """`jq` and other JSON tools write `1.0` as `1` (and some writers `1` as `1.0`): the same
    workload, the same digest, so a plan made from one runs with the other; a number that
    really changed still changes it."""
    raw = example("traffic")

    def floats(value):
        if isinstance(value, dict):
            return {k: floats(v) for k, v in value.items()}
        if isinstance(value, list):
            return [floats(v) for v in value]
        return float(value) if type(value) is int else value

    written = json.dumps(floats(raw))
    assert ".0" in written
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(raw))
    second.write_text(written)
    assert load_workload(first).digest == load_workload(second).digest
    third = tmp_path / "c.json"
    changed = floats(raw)
    changed["patterns"][0]["within"] = "17s"
    third.write_text(json.dumps(changed))
    assert load_workload(third).digest != load_workload(first).digest
