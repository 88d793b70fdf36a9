"""`cepplan run --follow --engine spark --adaptive`'s re-planning: each drift the stream's
job reports (on its progress line) re-planned as the in-process stream re-plans
(`adaptation.replan_for`), and a plan worth a switch published to the checkpoint's plans
folder (`stream_plans.py`), where the job takes it up at its next micro-batch, and kept as
OUT/plans/plan-N.json. The plans published, and the re-plans that published none
(CHECKPOINT/replans-kept.json), are the record: a restart goes on from it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cepplan.adaptive.adaptation import MIN_GAIN, replan_for
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.stream_plans import PLANS_FOLDER, publish_plan, published
from cepplan.fileio import write_bytes_atomic
from cepplan.planner.plan import Plan, read_plan, write_plan
from cepplan.workload.model import Workload

KEPT = "replans-kept.json"  # in the checkpoint: the re-plans that published no plan


class StreamReplanner:
    """Give `__call__` each progress line's figures; `finish` the stream's metrics."""

    def __init__(self, workload: Workload, plan: Plan, job: dict[str, Any], checkpoint: Path,
                 out: Path, warn: Callable[[str], None]):
        """`job`: the stream's job data (with its `adaptive` section); `checkpoint`: the
        stream's checkpoint directory; `out`: its output directory."""
        self.workload, self.job, self.out, self.warn = workload, job, out, warn
        self.folder = checkpoint / PLANS_FOLDER
        self.folder.mkdir(parents=True, exist_ok=True)
        plans = published(self.folder)  # a restart's too, and any dropped by hand
        self.number = max(plans, default=0)
        self.records = [p["replan"] for p in plans.values()
                        if isinstance(p, dict) and "replan" in p]
        last = [r["plan_file"] for r in self.records]
        self.plan = read_plan(out / last[-1]).to_json() if last else plan.to_json()
        self.kept_file = checkpoint / KEPT  # the re-plans that published nothing
        self.kept: list[dict[str, Any]] = json.loads(self.kept_file.read_text()) \
            if self.kept_file.exists() else []
        self.handled = {r["reported_at"] for r in self.records + self.kept}

    def __call__(self, figures: dict[str, Any]) -> None:
        """Re-plan for the drift a micro-batch reported, if any (once each); a switch it
        reports gains its re-plan's modelled gain (for the progress line)."""
        if "switch" in figures:
            for record in self.records:
                if Path(record["plan_file"]).name == figures["switch"]["plan_file"]:
                    figures["switch"]["modelled_gain"] = record["modelled_gain"]
        drift = figures.get("drift")
        if drift is None or drift["micro_batch"] in self.handled:
            return
        self.handled.add(drift["micro_batch"])
        from cepplan.planner.replan import ReplanRefused

        clock = time.perf_counter()
        record: dict[str, Any] = {"reported_at": drift["micro_batch"],
                                  "micro_batch": drift["micro_batch"],
                                  "watermark": drift["watermark"], "reason": drift["reason"],
                                  "changes": [], "switched": False, "plan_file": None}
        try:
            made = replan_for(self.workload, self.plan, drift["statistics"])
        except ReplanRefused as err:
            if not any("refused" in r for r in self.kept):
                self.warn(f"re-planning refused at watermark {drift['watermark']:g}: "
                          f"{err.message}; the stream goes on")
            self._keep({**record, "refused": err.message})
            return
        record.update(modelled_gain=made.gain,
                      replan_seconds=round(time.perf_counter() - clock, 3))
        if not (made.changes and made.gain >= MIN_GAIN):
            self._keep(record)
            return
        self.number += 1
        record.update(changes=made.changes, plan_file=f"plans/plan-{self.number}.json")
        (self.out / "plans").mkdir(parents=True, exist_ok=True)
        write_plan(made.plan, self.out / record["plan_file"])
        data = job_data(self.workload, made.plan, plan_kind=self.job["plan"]["kind"])
        self.plan = made.plan.to_json()
        data["adaptive"] = {**self.job["adaptive"], "invariants": self.plan["invariants"]}
        publish_plan(self.folder, self.number, {**data, "replan": record})
        self.records.append(record)

    def _keep(self, record: dict[str, Any]) -> None:
        """Record a re-plan that published nothing (in the checkpoint: a restart keeps it)."""
        self.kept.append(record)
        write_bytes_atomic(self.kept_file, json.dumps(self.kept).encode())

    def finish(self, stream: dict[str, Any]) -> None:
        """metrics.json's `stream.replans`: each re-plan, a published one with where the
        stream switched to it (`micro_batch`, `watermark`) or `switched` false when the
        stream ended first, and `stream.replans_refused` (the planner's reasons), as the
        in-process stream's; each drift record's statistics document traded for its rates."""
        switches = {s["plan_file"]: s for s in stream.get("switches", [])}
        replans = []
        for record in self.records:
            switch = switches.get(Path(record["plan_file"]).name)
            replans.append({**record, "switched": switch is not None,
                            **({"micro_batch": switch["micro_batch"],
                                "watermark": switch["watermark"]} if switch else {})})
        kept = [r for r in self.kept if "refused" not in r]
        stream["replans"] = sorted(replans + kept, key=lambda r: r["reported_at"])
        stream["replans_refused"] = [r["refused"] for r in self.kept if "refused" in r]
        for record in stream.get("drifts", []):
            document = record.pop("statistics", None)
            if document is not None:
                record["rates"] = {name: info["rate"] for name, info in
                                   document["types"].items()}
