"""`cepplan compare --events`: every planner's plan run on the user's events with the
in-process engine, measured beside what the model predicted. Plans change cost, never results:
the matches of every run are compared, and a difference is reported loudly."""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cepplan.planner.plan import Plan
from cepplan.workload.model import Workload


def measure_plans(report: Mapping[str, Any], plans: Mapping[str, Plan], workload: Workload,
                  events: Sequence[str],
                  progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The `measured` section: per planner rows to matchers, transmission factor measured
    (against the trivial plan's rows) and predicted (its modelled cost against trivial's),
    matches and wall time; `matches_equal` says whether every plan found the same matches."""
    from cepplan.engine_adapter.job_spec import job_data
    from cepplan.engine_adapter.local.engine import run_local_job

    totals = {p["name"]: p["total_cost"] for p in report["planners"]}
    runs, digests = [], {}
    with tempfile.TemporaryDirectory(prefix="cepplan-compare-") as scratch:
        for name, plan in plans.items():
            progress(f"running the {name} plan on the events")
            out = Path(scratch) / name
            kind = "trivial" if name == "trivial" else "plan"
            start = time.perf_counter()
            metrics = run_local_job(job_data(workload, plan, plan_kind=kind), list(events),
                                    out, say=lambda _text: None)
            seconds = time.perf_counter() - start
            digests[name] = _matches_digest(out / "matches")
            runs.append({"planner": name, "rows_to_matchers": metrics["rows_to_matchers"],
                         "matches": sum(metrics["matches"].values()),
                         "seconds": round(seconds, 3)})
    trivial_rows = next(r["rows_to_matchers"] for r in runs if r["planner"] == "trivial")
    for run in runs:
        run["measured_factor"] = run["rows_to_matchers"] / trivial_rows if trivial_rows else None
        run["predicted_factor"] = (totals[run["planner"]] / totals["trivial"]
                                   if totals.get("trivial") else None)
    return {"engine": "local", "events": [str(e) for e in events], "runs": runs,
            "matches_equal": len(set(digests.values())) == 1}


def _matches_digest(directory: Path) -> str:
    """A digest of every match written under `directory`, whatever the order of the matches
    and of the variables within one (a plan's join order sets the latter)."""
    lines = sorted(json.dumps(json.loads(line), sort_keys=True)
                   for part in sorted(directory.iterdir())
                   if not part.name.startswith((".", "_"))
                   for line in part.read_text().splitlines())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
