"""`cepplan run --follow --adaptive`: the stream measures its statistics over a sliding
horizon (`online_stats.py`), checks them against the running plan's invariants each quarter
horizon of event time while measuring took at most a share of the run's time (`drift.py`),
and when they have drifted re-plans (`planner.replan`)
and switches to the new plan at the watermark (`StreamMatcher.switch`). A plan without
invariants, or a re-plan refused, leaves the old plan running (docs/engine.md, "Adaptive
re-planning"). Each plan that takes over is written to OUT/plans/plan-N.json."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cepplan.adaptive.drift import DriftWatch
from cepplan.adaptive.drift_check import NO_INVARIANTS, DriftCheck
from cepplan.adaptive.online_stats import interval_end, settled, statistics_of
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.planner.plan import Plan, write_plan
from cepplan.workload.model import Workload

STATISTICS_SHARE = 0.02  # checks wait while measuring took more than this share of the time
MIN_GAIN = 1.1  # a new plan takes over when its modelled cost is at least this much lower
THROUGHPUT_BATCHES = 10  # micro-batches on each side of a switch its throughputs are over


class Adaptation:
    """The adaptive part of one followed stream: `attach` to its matcher, then
    `after_batch` once per micro-batch; `figures` for metrics.json."""

    def __init__(self, workload: Workload, plan: Plan, horizon: float, *,
                 warn: Callable[[str], None], time_limit: float | None = None,
                 share: float = STATISTICS_SHARE, out: Path | None = None):
        """`time_limit`: each re-plan's, in seconds (None: the plan's own); `share`: of the
        run's time, the most measuring may take (a check waits while it took more); `out`:
        the output directory the plans that take over are written under (None: not kept)."""
        self.workload = workload
        self.plan = plan.to_json()
        self.out = out
        self.data: dict[str, Any] | None = None  # the job data of the last plan to take over
        self.horizon = horizon
        self.warn = warn
        self.time_limit = time_limit
        self.drift = self._drift(plan.invariants)
        self.samples: list[tuple[int, float]] = []  # per micro-batch: events read, seconds
        self.replans: list[dict[str, Any]] = []
        self.refused: list[str] = []
        self.replanning = 0.0  # seconds re-planning (measuring and checking: `drift.seconds`)
        self.started = time.perf_counter()
        self.share = share

    def _drift(self, invariants: Any) -> DriftCheck | None:
        if not invariants:
            self.warn(NO_INVARIANTS)
            return None
        return DriftCheck(self.workload, invariants, self.horizon)

    def attach(self, matcher: StreamMatcher) -> None:
        """Measure every good event the matcher reads."""
        if self.drift is not None:
            matcher.observers.append(self.drift.observe)

    def after_batch(self, matcher: StreamMatcher, number: int, events: int,
                    seconds: float) -> None:
        """Micro-batch `number` (`events` read in `seconds` of work) was matched: check the
        statistics when due; re-plan and switch when they have drifted."""
        self.samples.append((events, seconds))
        watermark = matcher.watermark
        if self.drift is None or self.seconds > self.share * (
                time.perf_counter() - self.started) or \
                not self.drift.due(watermark, matcher.covered.first):
            return
        found, _ = self.drift.check(watermark)
        if found:
            self._replan(matcher, number, watermark, found)

    @property
    def seconds(self) -> float:
        """Seconds spent measuring, checking and re-planning."""
        return self.replanning + (self.drift.seconds if self.drift is not None else 0.0)

    def _replan(self, matcher: StreamMatcher, number: int, watermark: float,
                found: list) -> None:
        """Re-plan for the drifted statistics; switch when the plan changes and its modelled
        cost under them is at least `MIN_GAIN` times lower."""
        from cepplan.planner.replan import ReplanRefused  # only when re-planning

        clock = time.perf_counter()
        reason = [v.describe() for v in found]
        document = self.drift.online.measure(watermark)  # with the keys
        try:
            made = replan_for(self.workload, self.plan, document, self.time_limit)
        except ReplanRefused as err:
            if not self.refused:
                self.warn(f"re-planning refused at watermark {watermark:g}: {err.message}; "
                          "the stream goes on")
            self.refused.append(err.message)
            self.drift.watch.quiet_until = watermark + self.drift.rule.cooldown
            return
        switched = bool(made.changes) and made.gain >= MIN_GAIN
        plan_file = None
        if switched:
            self.data = job_data(self.workload, made.plan)
            matcher.switch(job_from_json(self.data))
            self.plan = made.plan.to_json()
            plan_file = self._keep(made.plan)
            self.drift.watch = DriftWatch(made.plan.invariants or {}, self.drift.rule, watermark)
        else:  # no better plan: the old one stays, checked again after the cooldown
            self.drift.watch.quiet_until = watermark + self.drift.rule.cooldown
        took = time.perf_counter() - clock
        self.replanning += took  # within the share of the run's time, as the checks
        self.replans.append({
            "micro_batch": number, "watermark": watermark, "reason": reason,
            "changes": made.changes if switched else [], "switched": switched,
            "plan_file": plan_file,
            "modelled_gain": made.gain, "replan_seconds": took,
            "sample": len(self.samples)})

    def _keep(self, plan: Plan) -> str | None:
        """Write the plan that took over to OUT/plans/plan-N.json (N: the switch's number);
        its name relative to OUT."""
        if self.out is None:
            return None
        name = f"plans/plan-{sum(r['switched'] for r in self.replans) + 1}.json"
        (self.out / "plans").mkdir(parents=True, exist_ok=True)
        write_plan(plan, self.out / name)
        return name

    def in_force(self, first: dict[str, Any]) -> dict[str, Any]:
        """The job data of the plan in force: the last to take over, else `first`'s."""
        return self.data if self.data is not None else first

    def last_switch(self) -> str:
        """The progress line's words for the last switch ("" before any)."""
        switched = [r for r in self.replans if r["switched"]]
        if not switched:
            return ""
        last = switched[-1]
        return f"  plan switched at batch {last['micro_batch']} ({last['modelled_gain']:.2f}x)"

    def figures(self) -> dict[str, Any]:
        """metrics.json's `stream.replans` and the online statistics' figures."""
        marks = [r["sample"] for r in self.replans] + [len(self.samples)]
        replans = []
        for index, record in enumerate(self.replans):
            at = record["sample"]
            span = min(THROUGHPUT_BATCHES, at - (marks[index - 1] if index else 0),
                       marks[index + 1] - at)
            replans.append({**{k: v for k, v in record.items() if k != "sample"},
                            "throughput_before": _rate(self.samples[at - span:at]),
                            "throughput_after": _rate(self.samples[at:at + span]),
                            "throughput_batches": span})
        return {"replans": replans, "replans_refused": self.refused,
                "horizon": self.horizon, "statistics_seconds": round(self.seconds, 3),
                "adaptive": self.drift is not None}


def replan_for(workload: Workload, plan: dict[str, Any], document: dict[str, Any],
               time_limit: float | None = None):
    """`planner.replan` of `plan` (its JSON) for the statistics `document` measured on the
    stream (keys included), each settled within its interval towards the plan's basis."""
    from cepplan.planner.replan import replan

    point = statistics_of(document, workload)
    statistics = settled(point, interval_end(document, point, 0),
                         interval_end(document, point, 1),
                         (plan.get("invariants") or {}).get("basis") or {})
    return replan(workload, plan, statistics, time_limit=time_limit)


def _rate(samples: list[tuple[int, float]]) -> float | None:
    """Events per second of work over the micro-batches `samples`."""
    seconds = sum(s for _, s in samples)
    return sum(n for n, _ in samples) / seconds if seconds > 0 else None
