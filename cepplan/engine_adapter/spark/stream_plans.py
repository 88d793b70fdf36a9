"""A plan taking over a Spark stream: a streaming job.json of another plan of the stream's
workload, dropped in CHECKPOINT/plans/ (written hidden, then renamed). The stream reads that
folder as one of its sources, so the plan reaches the stateful step in exactly one
micro-batch (Spark's offset log replays it after a restart), where the matcher switches to it
at the watermark reached (`StreamMatcher.switch`). A file that is not a whole job of the
stream's workload is refused and the old plan kept (docs/engine.md, "Adaptive re-planning").
Shipped in the job's runtime zip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cepplan.engine_adapter.runtime.job import Job, job_from_json
from cepplan.engine_adapter.runtime.spec import SpecError
from cepplan.fileio import write_bytes_atomic

PLANS_FOLDER = "plans"  # in the checkpoint: a job.json here takes over the stream
KEEPS = "the stream keeps its plan"


class PlanRefused(Exception):
    """A file in the plans folder that cannot take over the stream; `message` says why."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def publish_plan(folder: Path, number: int, data: dict[str, Any]) -> str:
    """Drop the job data `data` (another plan of the stream's workload) in `folder` as
    `plan-N.json`, whole or not at all; its name."""
    name = f"plan-{number}.json"
    write_bytes_atomic(folder / name, json.dumps(data).encode())
    return name


def published(folder: Path) -> dict[int, dict[str, Any] | None]:
    """The plans in `folder` by N (`plan-N.json`), in order: each one's JSON (None: not
    JSON, a file dropped by hand)."""
    found: dict[int, dict[str, Any] | None] = {}
    for path in folder.glob("plan-*.json"):
        number = path.stem.removeprefix("plan-")
        if number.isdigit():
            try:
                found[int(number)] = json.loads(path.read_text())
            except ValueError:
                found[int(number)] = None
    return dict(sorted(found.items()))


def plan_to_switch(text: str, name: str, data: dict[str, Any]) -> tuple[Job, dict[str, Any]]:
    """The job in the file `name` (its `text`) to switch the stream of the job `data` to,
    with its job data; `PlanRefused` for text that is not a whole job (a file still being
    written, or not a job.json) or a job of another workload or source."""
    try:
        new = json.loads(text)
    except ValueError:
        raise PlanRefused(f"{name}: not a whole job.json (a file read while it was written? "
                          f"write it hidden, then rename it); {KEEPS}") from None
    try:
        job = job_from_json(new)
    except (SpecError, KeyError, TypeError, AttributeError) as err:
        raise PlanRefused(f"{name}: not a job this stream can run ({str(err)[:80]}); "
                          f"{KEEPS}") from None
    for key, what in (("workload", "workload"), ("types", "workload"),
                      ("reader", "source")):
        if _same(new.get(key)) != _same(data.get(key)):
            raise PlanRefused(f"{name}: made for another {what} ("
                              f"{(new.get('workload') or {}).get('name')!s:.40}) than the "
                              f"stream's ({data['workload'].get('name')!s:.40}); {KEEPS}")
    return job, new


def _same(value: Any) -> Any:
    """The part of a job's section that must not change between plans (the workload's
    path may differ: its digest may not)."""
    if isinstance(value, dict) and "sha256" in value:
        return {k: v for k, v in value.items() if k != "path"}
    return value
