"""A plan written before plans recorded invariants (no `invariants` section, its digest over
the rest) loads and runs everywhere it ran: only re-planning needs the invariants."""

from __future__ import annotations

import json

from cepplan.planner.plan import CONTENT_DIGEST, content_digest, read_plan
from tests.conftest import EXAMPLES
from tests.in_process import cepplan

FRAUD = EXAMPLES / "fraud"


def test_a_plan_without_invariants_reads_runs_and_deploys_as_before(tmp_path):
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", FRAUD / "workload.json", "-o", plan, "--search", "none",
                   "-q").returncode == 0
    document = json.loads(plan.read_text())
    assert "invariants" in document
    older = {k: v for k, v in document.items() if k not in ("invariants", CONTENT_DIGEST)}
    older[CONTENT_DIGEST] = content_digest(older)  # as the version before wrote it
    old_plan = tmp_path / "old.json"
    old_plan.write_text(json.dumps(older))
    notes: list[str] = []
    read = read_plan(old_plan, notes=notes)
    assert notes == [] and read.invariants is None
    assert read.patterns["account_takeover"].detection.expected_cost is not None  # modelled
    outputs = {}
    for name, path in (("new", plan), ("old", old_plan)):
        done = cepplan("run", path, FRAUD / "events.csv", "-o", tmp_path / name)
        assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
        outputs[name] = sorted((tmp_path / name / "matches").rglob("*"))
        generated = cepplan("generate", path, "-o", tmp_path / f"job-{name}", "-q")
        assert generated.returncode == 0 and not generated.stderr, generated.stderr
    assert [p.read_bytes() for p in outputs["old"] if p.is_file()] == [
        p.read_bytes() for p in outputs["new"] if p.is_file()]
